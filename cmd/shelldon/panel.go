package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"shelldon/config"
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
	log := newLogger("panel", env.stderr)
	display, err := openDisplay(cfg.Panel, env, log)
	if err != nil {
		return err
	}
	p, err := panel.New(panel.Options{
		Socket: cfg.Socket, MaxFrame: int(cfg.Bus.MaxFrame), Display: display, Log: log,
		Policy: panelPolicy(cfg.Panel),
	})
	if err != nil {
		display.Close()
		return err
	}
	log.Info("panel: drawing", "display", display.Name())
	return p.Run(ctx)
}

// openDisplay opens the configured display; "auto" takes the Waveshare
// panel when one answers, and the PNG file otherwise.
func openDisplay(cfg config.Panel, env *environment, log *slog.Logger) (panel.Display, error) {
	switch cfg.Display {
	case "terminal":
		return &panel.Terminal{Out: env.stdout}, nil
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
