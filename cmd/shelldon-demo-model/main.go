// Command shelldon-demo-model serves the scripted demo model, an
// OpenAI-compatible chat-completions endpoint on a loopback address, for
// `make run` without a configured provider and for tests that launch a
// model as a separate process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"shelldon/demomodel"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shelldon-demo-model:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:0", "loopback `address` to listen on")
	script := flag.String("script", "", "JSON `file` of scripted steps, answered before the demo persona takes over")
	addrFile := flag.String("addr-file", "", "`path` to write the base URL to once listening")
	pace := flag.Duration("pace", demomodel.DemoPace, "pause between the chunks of a streamed answer (`duration`), for a step that sets none")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	var steps []demomodel.Step
	if *script != "" {
		var err error
		if steps, err = demomodel.LoadScript(*script); err != nil {
			return err
		}
	}
	ln, err := demomodel.Listen(*listen)
	if err != nil {
		return err
	}
	baseURL := demomodel.BaseURL(ln.Addr())
	if *addrFile != "" {
		if err := demomodel.WriteAddrFile(*addrFile, baseURL); err != nil {
			ln.Close()
			return err
		}
		defer os.Remove(*addrFile)
	}
	fmt.Fprintf(os.Stderr, "shelldon-demo-model: scripted demo model listening on %s\n", baseURL)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := demomodel.New(steps...)
	srv.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "shelldon-demo-model: "+format+"\n", args...) }
	srv.Pace = *pace
	return srv.Serve(ctx, ln)
}
