package contracts

import "testing"

func TestParseCommand(t *testing.T) {
	tests := []struct {
		text      string
		name, arg string
		ok        bool
	}{
		{"/status", "status", "", true},
		{"  /Status  ", "status", "", true},
		{"/status@shelldon_bot", "status", "", true},
		{"/restore calc", "restore", "calc", true},
		{"/restore\tcalc ", "restore", "calc", true},
		{"/status\nand more", "status", "and more", true},
		{"status", "", "", false},
		{"/", "", "", false},
		{"/ status", "", "", false},
		{"/etc/passwd please", "", "", false},
		{"", "", "", false},
		{"/@bot", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			name, arg, ok := ParseCommand(tt.text)
			if name != tt.name || arg != tt.arg || ok != tt.ok {
				t.Errorf("ParseCommand(%q) = %q, %q, %v; want %q, %q, %v", tt.text, name, arg, ok, tt.name, tt.arg, tt.ok)
			}
		})
	}
}
