package moment

import (
	"testing"

	"shelldon/faces"
)

func TestMoments(t *testing.T) {
	reg, err := faces.Builtin().With("over-the-moon", "(☆▽☆)")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  Moment
		want Moment
	}{
		{"Thinking()", Thinking(), Moment{"thinking", "(˘_˘)…", "thinking", "let me think…"}},
		{`Reply("sad", "poor cat")`, Reply(reg, "sad", "poor cat"), Moment{"sad", "(╥_╥)", "sad", "poor cat"}},
		{`Reply(" Cool ", "")`, Reply(reg, " Cool ", ""), Moment{"cool", "(⌐■_■)", "cool", ""}},
		{`Reply("over-the-moon", …)`, Reply(reg, "over-the-moon", "lunch!"), Moment{"over-the-moon", "(☆▽☆)", "over the moon", "lunch!"}},
		{`Reply("ecstatic", …)`, Reply(reg, "ecstatic", "hi"), Moment{"happy", "(^‿^)", "happy", "hi"}},
		{`Reply("cant-think", …)`, Reply(reg, "cant-think", "hm"), Moment{"cant-think", "(x_x)", "dizzy", "hm"}},
		{"Failed()", Failed(), Moment{"cant-think", "(x_x)", "dizzy", "can't think right now"}},
		{`Idle("bored")`, Idle("bored"), Moment{"bored", "(¬_¬)", "bored", "anyone there?"}},
		{`Idle("sleeping")`, Idle("sleeping"), Moment{"sleeping", "(-_-) zZ", "sleeping", "asleep; write to wake me"}},
		{`Idle("purple")`, Idle("purple"), Moment{"happy", "(^‿^)", "happy", "that went well"}},
		{"Away()", Away(), Moment{"sleeping", "(-_-) zZ", "away", "waiting for my core…"}},
		{"Waking()", Waking(), Moment{"sleeping", "(-_-) zZ", "waking", "waking up…"}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}

// TestIdleCaptionsNameBuiltinFaces: every mood is a built-in face, so a
// line for any other name could never be shown.
func TestIdleCaptionsNameBuiltinFaces(t *testing.T) {
	for mood := range idleCaptions {
		if !faces.Builtin().Has(mood) {
			t.Errorf("idleCaptions has a line for %q, which is no built-in face", mood)
		}
	}
}
