// Package chat is the terminal transport: `shelldon chat` (and `shelldon
// up --chat`) joins the bus as a transport named "cli", sends each line
// the owner types as a message, and prints the pet's replies — and, as a
// small panel of its own, the face the pet shows.
package chat
