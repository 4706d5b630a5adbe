package telegram

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// heapChild names the test the child process runs: it reads updates and
// prints how much its heap kept.
const heapChild = "SHELLDON_TELEGRAM_HEAP_CHILD"

// TestReadingUpdatesKeepsLittleOnTheHeap: encoding/json keeps a
// description of each struct type it decodes into, for as long as the
// process lives. Reading a message and a tap into go-telegram/bot's
// models.Update kept 402 KB on the heap; the transport's own types keep
// a few. Measured in a process of its own, where nothing else allocates.
func TestReadingUpdatesKeepsLittleOnTheHeap(t *testing.T) {
	if os.Getenv(heapChild) != "" {
		fmt.Println(heapKeptByReading())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadingUpdatesKeepsLittleOnTheHeap$")
	cmd.Env = append(os.Environ(), heapChild+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	kept, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
	if err != nil {
		t.Fatalf("the child printed %q, want the bytes its heap kept", out)
	}
	t.Logf("reading a message and a tap kept %d KB of heap", kept>>10)
	if kept > 64<<10 {
		t.Errorf("reading a message and a tap kept %d KB of heap for good, want at most 64", kept>>10)
	}
}

// heapKeptByReading reads a message and a tap as the inbox does and
// returns how many bytes of heap that left behind.
func heapKeptByReading() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	for _, body := range []string{
		`{"update_id":5,"message":{"message_id":7,"from":{"id":42,"is_bot":false,"first_name":"Ada","username":"ada"},"chat":{"id":42,"type":"private","first_name":"Ada"},"date":1700000000,"text":"hello"}}`,
		`{"update_id":6,"callback_query":{"id":"q1","from":{"id":42,"is_bot":false,"first_name":"Ada"},"message":{"message_id":7,"from":{"id":1,"is_bot":true,"first_name":"pet"},"chat":{"id":42,"type":"private"},"date":1700000000,"text":"May I?","reply_markup":{"inline_keyboard":[[{"text":"Approve","callback_data":"a:t1"}]]}},"chat_instance":"1","data":"a:t1"}}`,
	} {
		if _, err := readUpdate([]byte(body)); err != nil {
			panic(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc) - int64(before)
}
