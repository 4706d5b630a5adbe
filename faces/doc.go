// Package faces is the face registry: the names a model may pick with its
// FACE: line, and the kaomoji each name is drawn as. It holds the built-in
// faces, the faces added over time (kept in a small JSON file that core
// writes), and the rules a new face must pass, among them that the panel's
// font can draw every character of it.
//
// The package writes nothing; core owns the faces file and the panel only
// draws the glyphs it is sent.
package faces
