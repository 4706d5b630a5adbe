// Package render draws the pet's e-ink frame: a 1-bit 250×122 image (the
// Waveshare 2.13" V4 in landscape) with a status strip along the top, the
// face large in the middle and the pet's thought as a caption below it.
//
// Text is drawn with the embedded DejaVu Sans Mono Bold (LICENSE-DejaVu),
// thresholded to one bit. A frame also encodes itself as a PNG and as
// Unicode quadrant blocks for a terminal, the panel's other backends, and
// says which rectangle changed since the last frame, for partial refreshes.
package render
