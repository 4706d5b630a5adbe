// Package visible makes text that the owner is asked to approve show what
// it is: a shell command, a file write's content, git arguments, a URL, as
// the terminal chat and Telegram display them.
//
// An approval is only as honest as its text. Printed raw, the content of a
// write can carry ANSI escapes that erase the line and draw "writes 5 bytes
// to notes.txt" instead; a path with U+202E (right-to-left override) shows
// "evil\u202etxt.py" as "evilyp.txt"; a git argument holding a newline looks
// like two arguments, and argv joined by spaces cannot tell "a b" from "a"
// "b". Every renderer of such text should show it through this package.
//
// # What is escaped
//
// A rune is escaped when a terminal or chat client would not show it as
// itself:
//
//   - C0 controls U+0000–U+001F and DEL U+007F (escape sequences, carriage
//     returns and backspaces redraw what was shown before them);
//   - C1 controls U+0080–U+009F (some terminals read U+009B as CSI);
//   - every format character, category Cf: the soft hyphen, the bidi
//     controls U+061C, U+200E, U+200F, U+202A–U+202E and U+2066–U+2069,
//     the zero-width characters U+200B–U+200D, U+2060–U+2064, U+FEFF, the
//     annotation characters U+FFF9–U+FFFB, the tag characters, …;
//   - the rest of Unicode's default-ignorable code points, which fonts draw
//     as nothing: the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the
//     combining grapheme joiner U+034F, the Khmer inherent vowels U+17B4
//     and U+17B5, all of U+E0000–U+E0FFF (the tag characters and what is
//     reserved around them), and the variation selectors U+180B–U+180D,
//     U+180F, U+FE00–U+FE0F and U+E0100–U+E01EF, which can smuggle
//     arbitrary bytes behind an innocent character;
//   - the line and paragraph separators U+2028 and U+2029;
//   - private-use code points, which mean whatever a font makes of them;
//   - unassigned code points and noncharacters, as of the Unicode version
//     of Go's unicode tables (a font or a newer terminal may draw them as
//     nothing or as something we cannot predict);
//   - bytes that are not valid UTF-8.
//
// Put the other way round: a rune is kept when it is graphic (a letter,
// mark, number, punctuation, symbol or space, see [unicode.IsGraphic]) and
// not default-ignorable. The cost is that a ZWJ emoji sequence or an emoji
// with a variation selector shows its joiners and selectors escaped, and a
// character assigned after Go's Unicode tables shows as its code point.
//
// [Text] and [Line] write a C0 control, DEL or an invalid byte as a
// one-byte escape, \x1b, \x00, \x7f, \xff (and \n, \r, \t for those
// three), and any other escaped rune, C1 controls included, as its code
// point, <U+009B>, <U+202E>, <U+E0041>: \xHH is always a single byte and
// <U+…> a rune of several. [Quote] and [Argv] use ANSI-C quoting,
// $'…\x1b…\u202e…\U000e0041…', which bash, zsh, ksh and POSIX.1-2024
// shells read back as the same bytes (the \u and \U escapes as UTF-8 in
// a UTF-8 locale).
//
// The escapes are for the eye, not for reversing: a backslash or a
// literal "<U+202E>" in the input stays as it is, so Text of a text that
// already holds "\x1b" as four characters looks like Text of one holding
// ESC. What matters for an approval is that nothing is hidden; only Quote
// and Argv are exact.
//
// # What is not addressed
//
// Confusable characters (a Cyrillic "а" in a path, a decomposed "é"
// beside a precomposed one) are graphic and stay, and so do right-to-left
// letters, which the bidi algorithm may still reorder around them; only
// the controls that override that algorithm are escaped. Quote goes one
// step further and escapes non-ASCII spaces and U+2800 (the blank braille
// pattern) too, because inside a word they read as the space that
// separates words.
package visible
