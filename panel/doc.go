// Package panel is the pet's e-ink face: the actor behind `shelldon
// panel`. It listens to core's snapshots on the bus (each a moment of
// panel/moment: face, the strip's word, caption, with core's figures),
// keeps the scene, draws it with panel/render and sends the
// frame to a [Display] through a refresh policy made for slow e-ink: an
// unchanged frame is not sent again, a reaction holds the screen for its
// dwell against the mood's drift, small changes are partial refreshes and
// a full refresh clears their ghosts every so often, and an idle display
// sleeps. When core is away the panel shows its own moment, the pet
// asleep and away, with none of core's figures.
//
// Displays: the Waveshare 2.13" V4 (panel/epd), a PNG file replaced
// atomically ([PNGFile]) and a terminal preview ([Terminal]).
package panel
