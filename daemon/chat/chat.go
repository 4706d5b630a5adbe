package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"shelldon/bus"
	"shelldon/contracts"
)

// TransportName is the name the terminal joins the bus with.
const TransportName = "cli"

// maxLine is the longest line the owner may type.
const maxLine = 64 << 10

// Options configure a terminal chat.
type Options struct {
	Socket   string
	MaxFrame int
	In       io.Reader
	Out      io.Writer
	// Banner is printed once before the first prompt (the demo-model
	// notice, for instance).
	Banner string
	// Logf reports bus trouble; nil discards it.
	Logf func(format string, args ...any)
}

// Run chats until the input ends or ctx is done.
func Run(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	printf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(opts.Out, format, args...)
	}
	transport := &bus.Client{
		Socket: opts.Socket, MaxFrame: opts.MaxFrame, Logf: opts.Logf,
		Hello: contracts.Hello{Role: contracts.RoleTransport, Name: TransportName},
	}
	panel := &bus.Client{
		Socket: opts.Socket, MaxFrame: opts.MaxFrame, Logf: opts.Logf,
		Hello: contracts.Hello{Role: contracts.RolePanel, Name: TransportName},
	}
	errs := make(chan error, 2)
	// asking is the parked turn whose approval the next line answers.
	var asking struct {
		sync.Mutex
		turn string
	}
	go func() {
		errs <- transport.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
			switch env.Kind {
			case contracts.KindOutbound:
				var out contracts.Outbound
				if env.Decode(&out) == nil {
					printf("\nshelldon: %s\n> ", indent(out.Text))
				}
			case contracts.KindApprovalRequest:
				var req contracts.ApprovalRequest
				if env.Decode(&req) != nil {
					return
				}
				asking.Lock()
				asking.turn = req.Turn
				asking.Unlock()
				printf("\n── shelldon asks to use %s: %s\n   %s\n   approve? [y/N] ", req.Tool, req.Note, indent(req.Detail))
			}
		})
	}()
	go func() {
		errs <- panel.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
			var s contracts.Snapshot
			if env.Kind != contracts.KindSnapshot || env.Decode(&s) != nil {
				return
			}
			// The thinking face shows on every turn; the terminal needs
			// only the faces that say something.
			if s.Face != "thinking" {
				printf("\n          %s  %s\n> ", s.Glyphs, s.Caption)
			}
		})
	}()

	if opts.Banner != "" {
		printf("%s\n", opts.Banner)
	}
	printf("Type a message and press Enter; Ctrl-D quits.\n> ")
	lines := make(chan string)
	var readErr error // set before lines is closed
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(opts.In)
		sc.Buffer(make([]byte, maxLine), maxLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		readErr = sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			if err != nil {
				return fmt.Errorf("chat: %w", err)
			}
		case line, ok := <-lines:
			if !ok {
				if errors.Is(readErr, bufio.ErrTooLong) {
					return fmt.Errorf("chat: a line is longer than %d bytes: %w", maxLine, readErr)
				}
				if readErr != nil {
					return fmt.Errorf("chat: read input: %w", readErr)
				}
				printf("\nbye\n")
				return nil
			}
			text := strings.TrimSpace(line)
			asking.Lock()
			turn := asking.turn
			asking.turn = ""
			asking.Unlock()
			var env contracts.Envelope
			var err error
			switch {
			case turn != "":
				// The line answers the question; anything but yes is no.
				yes := strings.EqualFold(text, "y") || strings.EqualFold(text, "yes")
				env, err = contracts.NewEnvelope(contracts.KindDecision, "", contracts.Decision{Turn: turn, Approve: yes, Chat: TransportName})
			case text == "":
				printf("> ")
				continue
			default:
				env, err = contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: TransportName, Text: text})
			}
			if err == nil {
				err = transport.Send(env)
			}
			if errors.Is(err, bus.ErrNotConnected) {
				printf("(core is not reachable yet; message not sent — try again in a moment)\n> ")
			} else if err != nil {
				printf("(could not send: %v)\n> ", err)
			}
		}
	}
}

// indent lines up a message's later lines under its first.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n          ") }
