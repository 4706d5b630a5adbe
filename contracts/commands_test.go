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
		{"/pending_6", "pending", "6", true},
		{"/pending_6@shelldon_bot", "pending", "6", true},
		{"/restore_my_tool", "restore", "my_tool", true},
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

// TestInboundCommand: what the owner typed is read as a command; the
// transcript of a voice note and a photo's caption never are, whatever
// they start with.
func TestInboundCommand(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   Inbound
		ok   bool
	}{
		{"typed", Inbound{Text: "/rules revoke 1"}, true},
		{"spoken", Inbound{Text: "/rules revoke 1", Spoken: true}, false},
		{"a photo's caption", Inbound{Text: "/restore calc", Image: &Image{MIME: "image/jpeg"}}, false},
		{"typed words", Inbound{Text: "rules revoke 1"}, false},
	} {
		if _, _, ok := InboundCommand(tt.in); ok != tt.ok {
			t.Errorf("InboundCommand(%s %q) ok = %v, want %v", tt.name, tt.in.Text, ok, tt.ok)
		}
	}
}
