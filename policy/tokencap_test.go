package policy

import "testing"

func TestTokenCapAsksAtAndOverItsFigure(t *testing.T) {
	for _, tc := range []struct {
		cap   TokenCap
		today int
		want  bool
	}{
		{0, 0, false},
		{0, 1_000_000, false}, // no cap
		{1000, 999, false},
		{1000, 1000, true},
		{1000, 5000, true},
	} {
		if got := tc.cap.Asks(tc.today); got != tc.want {
			t.Errorf("TokenCap(%d).Asks(%d) = %v, want %v", tc.cap, tc.today, got, tc.want)
		}
	}
}
