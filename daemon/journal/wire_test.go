package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/slogtest"
	"time"

	"shelldon/testhost"
)

// journalSocket is where go-systemd's journal package sends, fixed in it.
const journalSocket = "/run/systemd/journal/socket"

// wireChildEnv marks the child process that runs the wire tests in its own
// mount namespace; it holds the parent's namespace, to prove the child is
// elsewhere before it mounts anything.
const wireChildEnv = "SHELLDON_JOURNAL_WIRE_CHILD"

// TestWire runs the real go-systemd client against a journald stand-in.
// The client's socket path is fixed, so the test re-runs itself in a
// private mount namespace with a tmpfs over /run/systemd/journal: the
// host's journald, if any, never sees a datagram and no host path changes.
func TestWire(t *testing.T) {
	if parentNS := os.Getenv(wireChildEnv); parentNS != "" {
		runWireTests(t, parentNS)
		return
	}
	testhost.Root(t)
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatalf("read mount namespace: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWire$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), wireChildEnv+"="+ns)
	// Go makes every mount in the new namespace private before the child runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wire tests in a private mount namespace: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestWire/")) {
		t.Fatalf("the child ran no wire test:\n%s", out)
	}
	t.Logf("child:\n%s", out)
}

func runWireTests(t *testing.T, parentNS string) {
	isolateJournalDir(t, parentNS)

	t.Run("New falls back without journald", func(t *testing.T) {
		fallback := slog.NewTextHandler(io.Discard, nil)
		if h := New(Options{Fallback: fallback}); h != slog.Handler(fallback) {
			t.Errorf("New without a journal socket = %T, want the fallback", h)
		}
	})

	srv := listenJournal(t)

	t.Run("New picks the journal", func(t *testing.T) {
		h, ok := New(Options{Tee: true}).(*Handler)
		if !ok {
			t.Fatalf("New with a journal socket = %T, want *Handler", h)
		}
		if !h.tee {
			t.Errorf("New(Tee) on a terminal-like stderr dropped the tee")
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(syscall.Stderr, &st); err != nil {
			t.Fatal(err)
		}
		t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
		if h := New(Options{Tee: true}).(*Handler); h.tee {
			t.Errorf("New(Tee) kept the tee although stderr is the journal stream")
		}
	})

	h := NewHandler(Options{Actor: "worker"})
	l := slog.New(h)

	t.Run("fields", func(t *testing.T) {
		l.With("turn", "t-7").WithGroup("tool").Info("ran", "name", "run_shell", "a.b", 1, "", "dropped", "_x", 2)
		want := map[string]string{
			"MESSAGE":            "ran",
			"PRIORITY":           "6",
			"SYSLOG_IDENTIFIER":  "shelldon-worker",
			"SHELLDON_TURN":      "t-7",
			"SHELLDON_TOOL_NAME": "run_shell",
			"SHELLDON_TOOL_A_B":  "1",
			"SHELLDON_TOOL__X":   "2",
		}
		entry := srv.next(t)
		if _, err := time.Parse(time.RFC3339Nano, entry["SHELLDON_TIME"]); err != nil {
			t.Errorf("SHELLDON_TIME = %q: %v", entry["SHELLDON_TIME"], err)
		}
		delete(entry, "SHELLDON_TIME")
		if !equalFields(entry, want) {
			t.Errorf("entry = %q, want %q", entry, want)
		}
	})

	t.Run("priorities", func(t *testing.T) {
		dl := slog.New(NewHandler(Options{Level: slog.LevelDebug}))
		for _, tc := range []struct {
			log  func(msg string, args ...any)
			want string
		}{{dl.Debug, "7"}, {dl.Info, "6"}, {dl.Warn, "4"}, {dl.Error, "3"}} {
			tc.log("m")
			if got := srv.next(t)["PRIORITY"]; got != tc.want {
				t.Errorf("PRIORITY = %q, want %q", got, tc.want)
			}
		}
	})

	t.Run("multi-line", func(t *testing.T) {
		l.Info("line 1\nline 2", "out", "a\nb\n\nc", "err", errors.New("x\ny"))
		entry := srv.next(t)
		for field, want := range map[string]string{"MESSAGE": "line 1\nline 2", "SHELLDON_OUT": "a\nb\n\nc", "SHELLDON_ERR": "x\ny"} {
			if entry[field] != want {
				t.Errorf("%s = %q, want %q", field, entry[field], want)
			}
		}
	})

	for _, tc := range []struct {
		name    string
		size    int
		viaFile bool
	}{
		{"200 KB in one datagram", 200 << 10, false},
		{"1 MB through a passed file", 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			message := strings.Repeat("0123456789abcde\n", tc.size/16)
			l.Info(message, "turn", "big")
			entry, viaFile := srv.nextEntry(t)
			if entry["MESSAGE"] != message {
				t.Errorf("MESSAGE arrived with %d bytes, want %d", len(entry["MESSAGE"]), len(message))
			}
			if entry["SHELLDON_TURN"] != "big" {
				t.Errorf("SHELLDON_TURN = %q, want %q", entry["SHELLDON_TURN"], "big")
			}
			if viaFile != tc.viaFile {
				t.Errorf("arrived through a passed file = %v, want %v", viaFile, tc.viaFile)
			}
		})
	}

	t.Run("slogtest", func(t *testing.T) {
		slogtest.Run(t,
			func(*testing.T) slog.Handler { return NewHandler(Options{AddSource: true}) },
			func(t *testing.T) map[string]any { return slogtestMap(srv.next(t)) })
	})

	if n := h.SendFailures(); n != 0 {
		t.Errorf("SendFailures() = %d after journald took every record, want 0", n)
	}

	t.Run("journald gone", func(t *testing.T) {
		srv.close(t)
		var out bytes.Buffer
		h := NewHandler(Options{Fallback: slog.NewTextHandler(&out, nil)})
		slog.New(h).Info("lost?", "turn", "t-9")
		if !strings.Contains(out.String(), "msg=lost? turn=t-9") {
			t.Errorf("fallback = %q, want the record", out.String())
		}
		if n := h.SendFailures(); n != 1 {
			t.Errorf("SendFailures() = %d, want 1", n)
		}
	})
}

// isolateJournalDir covers the journal socket's directory, and /dev/shm
// where go-systemd writes oversized entries, with fresh tmpfs mounts in
// this process's own mount namespace.
func isolateJournalDir(t *testing.T, parentNS string) {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatalf("read mount namespace: %v", err)
	}
	if ns == parentNS {
		t.Fatalf("still in the parent's mount namespace %s; refusing to mount", ns)
	}
	// The nearest existing directory is covered, so no host directory is
	// created; the rest of the path is made inside the tmpfs.
	dir := filepath.Dir(journalSocket)
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	for _, target := range []string{dir, "/dev/shm"} {
		if err := syscall.Mount("tmpfs", target, "tmpfs", 0, "mode=0755"); err != nil {
			t.Fatalf("mount tmpfs on %s: %v", target, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(journalSocket), 0o755); err != nil {
		t.Fatal(err)
	}
}

// journalServer stands in for journald's native socket.
type journalServer struct {
	conn *net.UnixConn
	buf  []byte
}

func listenJournal(t *testing.T) *journalServer {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: journalSocket, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen on %s: %v", journalSocket, err)
	}
	srv := &journalServer{conn: conn, buf: make([]byte, 4<<20)}
	t.Cleanup(func() { conn.Close() })
	return srv
}

func (s *journalServer) close(t *testing.T) {
	if err := s.conn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(journalSocket); err != nil {
		t.Fatal(err)
	}
}

func (s *journalServer) next(t *testing.T) map[string]string {
	t.Helper()
	entry, _ := s.nextEntry(t)
	return entry
}

// nextEntry reads the entry the client has already sent (journal.Send
// returns only once the datagram is queued), and says whether it came as
// a passed file rather than in the datagram.
func (s *journalServer) nextEntry(t *testing.T) (entry map[string]string, viaFile bool) {
	t.Helper()
	// The deadline only turns a missing entry into a failure, not a hang.
	if err := s.conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, flags, _, err := s.conn.ReadMsgUnix(s.buf, oob)
	if err != nil {
		t.Fatalf("read journal datagram: %v", err)
	}
	if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
		t.Fatalf("journal datagram truncated (flags %#x)", flags)
	}
	data := s.buf[:n]
	if oobn > 0 {
		if n != 0 {
			t.Fatalf("datagram carries both %d bytes and a file", n)
		}
		data = readPassedFile(t, oob[:oobn])
		viaFile = true
	}
	entry, err = decodeNative(data)
	if err != nil {
		t.Fatalf("decode journal entry: %v", err)
	}
	return entry, viaFile
}

// readPassedFile reads the whole of the one file passed with SCM_RIGHTS,
// from its start, as journald does: the sender's offset sits at the end.
func readPassedFile(t *testing.T, oob []byte) []byte {
	t.Helper()
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("parse control message: %d messages, %v", len(msgs), err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("parse passed files: %d fds, %v", len(fds), err)
	}
	f := os.NewFile(uintptr(fds[0]), "journal entry")
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, info.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		t.Fatalf("read passed file: %v", err)
	}
	return data
}

// decodeNative parses journald's native protocol: "KEY=value\n", or for a
// value that may hold newlines "KEY\n", its length as a little-endian
// uint64, the value and "\n". It rejects what journald would not take
// from a client: a field name that is empty, too long, starts with '_' or
// a digit, or has a character outside [A-Z0-9_].
func decodeNative(data []byte) (map[string]string, error) {
	fields := map[string]string{}
	for len(data) > 0 {
		end := bytes.IndexAny(data, "=\n")
		if end < 0 {
			return nil, fmt.Errorf("field %q has no end", data)
		}
		name := string(data[:end])
		if err := checkFieldName(name); err != nil {
			return nil, err
		}
		var value string
		if data[end] == '=' {
			rest := data[end+1:]
			eol := bytes.IndexByte(rest, '\n')
			if eol < 0 {
				return nil, fmt.Errorf("field %s: value has no newline", name)
			}
			value, data = string(rest[:eol]), rest[eol+1:]
		} else {
			rest := data[end+1:]
			if len(rest) < 8 {
				return nil, fmt.Errorf("field %s: length cut short", name)
			}
			size := binary.LittleEndian.Uint64(rest)
			rest = rest[8:]
			if size >= uint64(len(rest)) || rest[size] != '\n' {
				return nil, fmt.Errorf("field %s: %d-byte value not followed by a newline", name, size)
			}
			value, data = string(rest[:size]), rest[size+1:]
		}
		if _, dup := fields[name]; dup {
			return nil, fmt.Errorf("field %s sent twice", name)
		}
		fields[name] = value
	}
	return fields, nil
}

func checkFieldName(name string) error {
	if name == "" || len(name) > maxFieldName || name[0] == '_' || ('0' <= name[0] && name[0] <= '9') {
		return fmt.Errorf("journald rejects field name %q", name)
	}
	for _, c := range name {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return fmt.Errorf("journald rejects field name %q", name)
		}
	}
	return nil
}

func equalFields(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

func TestDecodeNative(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    string
		want    map[string]string
		wantErr bool
	}{
		{"simple", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}, false},
		{"binary", "M\n\x03\x00\x00\x00\x00\x00\x00\x00a\nb\nN=x\n", map[string]string{"M": "a\nb", "N": "x"}, false},
		{"empty", "", map[string]string{}, false},
		{"no newline", "A=1", nil, true},
		{"short length", "M\n\x03\x00", nil, true},
		{"length past end", "M\n\xff\x00\x00\x00\x00\x00\x00\x00ab\n", nil, true},
		{"length overflows", "M\n\xff\xff\xff\xff\xff\xff\xff\xffab\n", nil, true},
		{"value without its newline", "M\n\x02\x00\x00\x00\x00\x00\x00\x00abX", nil, true},
		{"underscore", "_PID=1\n", nil, true},
		{"lower case", "a=1\n", nil, true},
		{"duplicate", "A=1\nA=2\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeNative([]byte(tc.data))
			if (err != nil) != tc.wantErr || (err == nil && !equalFields(got, tc.want)) {
				t.Errorf("decodeNative(%q) = %q, %v; want %q, error %v", tc.data, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
