package bus_test

import (
	"bytes"
	"fmt"

	"shelldon/bus"
	"shelldon/contracts"
)

// A frame is written to any io.Writer and read back from any io.Reader;
// on the bus both ends are the Unix socket.
func Example() {
	var stream bytes.Buffer
	out, err := contracts.NewEnvelope(contracts.KindJob, "t-1", map[string]string{"prompt": "hi"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := bus.WriteFrame(&stream, out, bus.DefaultMaxFrame); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("frame: 4-byte length + %d bytes of JSON\n", stream.Len()-4)

	in, err := bus.ReadFrame(&stream, bus.DefaultMaxFrame)
	if err != nil {
		fmt.Println(err)
		return
	}
	var body map[string]string
	if err := in.Decode(&body); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(in.Kind, in.Turn, body["prompt"])
	// Output:
	// frame: 4-byte length + 50 bytes of JSON
	// JOB t-1 hi
}
