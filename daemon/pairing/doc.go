// Package pairing makes the bot's owner without numeric ids: `shelldon
// pair` mints a one-time code, and the first Telegram user who sends it
// to the bot becomes the owner.
//
// A code is 8 characters of Crockford's base32 (40 bits), shown as
// ABCD-EFGH and read back in any case, with or without the hyphen or
// spaces. It lives 10 minutes, is spent by its first use, and by
// MaxGuesses wrong guesses: with 5 guesses against 2^40 codes a stranger's
// chance is one in 200 billion, and a flood of guesses spends the code,
// which the owner mints again. Only the code's SHA-256 is kept, in a file
// of the state directory (statedir.Layout.Pairing) written whole or not
// at all, so the command that mints it needs no running core, and a
// restart of core keeps it.
//
// The owner a code made is kept by the transport (in the state store);
// this package only mints and checks codes.
package pairing
