package tailbuf

import "testing"

func TestBuffer(t *testing.T) {
	cases := []struct {
		name    string
		max     int
		writes  []string
		want    string
		dropped int64
	}{
		{"nothing", 4, nil, "", 0},
		{"fits", 8, []string{"abc", "de"}, "abcde", 0},
		{"exactly full", 4, []string{"ab", "cd"}, "abcd", 0},
		{"wraps", 4, []string{"abc", "def"}, "cdef", 2},
		{"one write larger than the cap", 4, []string{"abcdefghij"}, "ghij", 6},
		{"many small writes", 3, []string{"a", "b", "c", "d", "e", "f", "g"}, "efg", 4},
		{"large after wrap", 5, []string{"abc", "defg", "hijklmnop"}, "lmnop", 11},
		{"cap of one", 1, []string{"xy", "z"}, "z", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.max)
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			got, dropped := b.Bytes()
			if string(got) != tc.want || dropped != tc.dropped {
				t.Errorf("after %q with cap %d: %q, %d dropped; want %q, %d", tc.writes, tc.max, got, dropped, tc.want, tc.dropped)
			}
		})
	}
}
