package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/config"
	"shelldon/daemon/journal"
	"shelldon/panel"
	"shelldon/panel/epd"
)

// cmdPanel drives the pet's face: on the Waveshare display, a PNG file or
// this terminal (--preview), as panel.display says.
func cmdPanel(ctx context.Context, env *environment, args []string) error {
	var preview bool
	cfg, err := parseConfig("panel", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&preview, "preview", false, "draw the face in this terminal")
	})
	if err != nil {
		return err
	}
	if preview {
		cfg.Panel.Display = "terminal"
	}
	log := journal.NewLogger("panel", env.stderr)
	display, err := openDisplay(cfg.Panel, env, log)
	if err != nil {
		return err
	}
	opts := panel.Options{
		Socket: cfg.Socket, MaxFrame: int(cfg.Bus.MaxFrame), Display: display, Log: log,
		Policy: panelPolicy(cfg.Panel),
	}
	if preview {
		// The service waits for core as long as it runs; the owner's
		// preview ends once core is gone for good.
		opts.GoneAfter = previewGoneAfter
	}
	p, err := panel.New(opts)
	if err != nil {
		display.Close()
		return err
	}
	log.Info("panel: drawing", "display", display.Name())
	err = p.Run(ctx)
	if errors.Is(err, panel.ErrCoreGone) {
		return fmt.Errorf("%w; the preview ends (start core, then the preview again)", err)
	}
	return err
}

// previewGoneAfter is how long the preview waits for core once core is
// gone: longer than a restart of core takes (about a second).
const previewGoneAfter = 30 * time.Second

// openDisplay opens the configured display; "auto" takes the Waveshare
// panel when one answers, and the PNG file otherwise.
func openDisplay(cfg config.Panel, env *environment, log *slog.Logger) (panel.Display, error) {
	switch cfg.Display {
	case "terminal":
		return &panel.Terminal{Out: env.stdout, Size: func() (int, int) { return terminalSize(env.stdout, os.Getenv) }}, nil
	case "png":
		return panel.PNGFile{Path: cfg.PNGPath}, nil
	case "waveshare":
		d, err := openWaveshare(cfg)
		if err != nil {
			return nil, fmt.Errorf("panel: %w", err)
		}
		return d, nil
	}
	d, err := openWaveshare(cfg)
	if err != nil {
		log.Info("panel: no e-ink display; drawing to a PNG file", "path", cfg.PNGPath, "why", err)
		return panel.PNGFile{Path: cfg.PNGPath}, nil
	}
	return d, nil
}

func openWaveshare(cfg config.Panel) (*epd.Dev, error) {
	d, err := epd.Open()
	if err != nil {
		return nil, err
	}
	d.SetUpsideDown(cfg.UpsideDown)
	return d, nil
}

func panelPolicy(cfg config.Panel) panel.Policy {
	return panel.Policy{FullEvery: cfg.FullEvery, FullAfter: cfg.FullAfter.Duration, SleepAfter: cfg.SleepAfter.Duration}
}

// Without a terminal to ask, nor $COLUMNS and $LINES, the preview fits the
// classic terminal.
const defaultColumns, defaultLines = 80, 24

// terminalSize is the size of the terminal out is, asked of the terminal
// so that a resize counts; when out is no terminal, $COLUMNS and $LINES
// (which a shell sets, and a user may) and otherwise 80×24.
func terminalSize(out any, getenv func(string) string) (columns, lines int) {
	if f, ok := out.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
			return int(ws.Col), int(ws.Row)
		}
	}
	return sizeFromEnv(getenv("COLUMNS"), defaultColumns), sizeFromEnv(getenv("LINES"), defaultLines)
}

// sizeFromEnv reads a terminal dimension from the environment, fallback
// when it is unset or not a positive number of at most 4 digits.
func sizeFromEnv(value string, fallback int) int {
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 || n > 9999 {
		return fallback
	}
	return n
}
