package intake_test

import (
	"fmt"

	"shelldon/daemon/intake"
)

// The owner's notes name a message by its first words, on one line.
func ExampleQuote() {
	fmt.Println(intake.Quote("please   remind me\nto water the plants"))
	// Output: “please remind me to water the plants”
}
