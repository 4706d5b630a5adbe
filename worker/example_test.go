package worker_test

import (
	"fmt"

	"shelldon/contracts"
	"shelldon/faces"
	"shelldon/worker"
)

// A model's final text becomes a turn's result: its private reasoning
// dropped before anything is read, the ```ops block taken as proposed
// changes, the THOUGHT: line as the panel's caption and the FACE: line as
// the reaction face, checked against the registry.
func ExampleParseReply() {
	raw := "<think>They asked me to remember this; FACE: grumpy</think>" +
		"Noted, hazelnut it is.\n" +
		"```ops\n" +
		`[{"op":"remember","topic":"coffee","text":"likes hazelnut"}]` + "\n" +
		"```\n" +
		"THOUGHT: coffee facts matter\n" +
		"FACE: happy\n"
	r := worker.ParseReply(raw, faces.Builtin())
	fmt.Printf("payload: %q\n", r.Payload)
	fmt.Printf("thought: %q, face: %q\n", r.Thought, r.Face)
	for _, op := range r.Ops {
		if note, ok := op.Body.(contracts.Remember); ok {
			fmt.Printf("op: remember %q under %q\n", note.Text, note.Topic)
		}
	}
	// An ops block that does not decode is refused whole and left where
	// the owner sees it.
	bad := worker.ParseReply("Done.\n```ops\n[{\"op\":\"remember\"\n```\n", faces.Builtin())
	fmt.Println("ops:", len(bad.Ops), "notes:", len(bad.Notes))
	// Output:
	// payload: "Noted, hazelnut it is."
	// thought: "coffee facts matter", face: "happy"
	// op: remember "likes hazelnut" under "coffee"
	// ops: 0 notes: 1
}

// While the model writes, the owner sees what the reply would show so
// far: the control lines, the ops block and a line that may still become
// one of them are left out.
func ExampleDraftOf() {
	for _, partial := range []string{
		"Noted, hazel",
		"Noted, hazelnut it is.\n```o",
		"Noted, hazelnut it is.\n```ops\n[{\"op\":\"remember\",",
		"Noted, hazelnut it is.\n```ops\n[]\n```\nTHOUGHT: coffee",
	} {
		fmt.Printf("%q\n", worker.DraftOf(partial))
	}
	// Output:
	// "Noted, hazel"
	// "Noted, hazelnut it is."
	// "Noted, hazelnut it is."
	// "Noted, hazelnut it is."
}
