package mood

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/faces"
)

// midnight is the fake clock's day; no test reads the real clock.
var midnight = time.Date(2025, time.March, 10, 0, 0, 0, 0, time.UTC)

var testConfig = Config{Night: clock.Window{Start: 23 * time.Hour, End: 7 * time.Hour}, Lonely: 2*time.Hour + 30*time.Minute}

func clockAt(d time.Duration) time.Time { return midnight.Add(d) }

func TestEventString(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{OwnerMessage, "owner-message"},
		{TurnOK, "turn-ok"},
		{TurnFailed, "turn-failed"},
		{Approved, "approved"},
		{Denied, "denied"},
		{Expired, "expired"},
		{Quarantined, "quarantined"},
		{Promoted, "promoted"},
		{0, "Event(0)"},
		{99, "Event(99)"},
	}
	for _, tc := range tests {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("Event(%d).String() = %q, want %q", int(tc.e), got, tc.want)
		}
	}
}

func TestOn(t *testing.T) {
	before := clockAt(10 * time.Hour)
	now := clockAt(10*time.Hour + time.Minute)
	feeling := func(valence, energy int) State {
		s := State{Valence: valence, Energy: energy, LastChat: before, Since: before}
		return s.derive(before, testConfig, false, nil)
	}
	tests := []struct {
		from         State
		e            Event
		wantValence  int
		wantEnergy   int
		wantMood     string
		wantWhy      string
		wantLastChat time.Time
	}{
		// From a neutral pet (valence 0, energy 0), one row per event.
		{feeling(0, 0), OwnerMessage, 1, 2, curious, "the owner wrote", now},
		{feeling(0, 0), TurnOK, 1, 0, neutral, "nothing much going on", before},
		{feeling(0, 0), TurnFailed, -2, 0, neutral, "nothing much going on", before},
		{feeling(0, 0), Approved, 1, 1, neutral, "nothing much going on", before},
		{feeling(0, 0), Denied, -1, 0, neutral, "nothing much going on", before},
		{feeling(0, 0), Expired, -1, 0, neutral, "nothing much going on", before},
		{feeling(0, 0), Quarantined, -2, 0, neutral, "nothing much going on", before},
		{feeling(0, 0), Promoted, 2, 2, happy, "the owner kept a tool I wrote", before},
		// From livelier pets, where the events tip the mood.
		{feeling(0, 2), TurnFailed, -2, 2, grumpy, "a turn failed", before},
		{feeling(0, 2), Denied, -1, 2, grumpy, "the owner denied a request", before},
		{feeling(1, 2), TurnOK, 2, 2, happy, "a turn answered", before},
		{feeling(2, 2), Approved, 3, 3, excited, "the owner approved", before},
		{feeling(2, 3), OwnerMessage, 3, 5, excited, "the owner wrote", now},
		{feeling(-1, 0), Quarantined, -3, 0, sad, "a tool of mine was put away", before},
		{feeling(-2, 0), Expired, -3, 0, sad, "a request expired unanswered", before},
		// Bad news that leaves a good mood standing is not its reason.
		{feeling(3, 3), Denied, 2, 3, happy, "things went well lately", before},
		// An unknown event changes no feeling.
		{feeling(0, 2), 0, 0, 2, curious, "something is going on", before},
		{feeling(0, 2), 99, 0, 2, curious, "something is going on", before},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s from %s v%d e%d", tc.e, tc.from.Mood, tc.from.Valence, tc.from.Energy)
		t.Run(name, func(t *testing.T) {
			got := tc.from.On(tc.e, now, testConfig)
			if got.Valence != tc.wantValence || got.Energy != tc.wantEnergy ||
				got.Mood != tc.wantMood || got.Why != tc.wantWhy || !got.LastChat.Equal(tc.wantLastChat) {
				t.Fatalf("On(%s) = v%d e%d %s (%s) last chat %v, want v%d e%d %s (%s) last chat %v",
					tc.e, got.Valence, got.Energy, got.Mood, got.Why, got.LastChat,
					tc.wantValence, tc.wantEnergy, tc.wantMood, tc.wantWhy, tc.wantLastChat)
			}
			wantSince := before
			if got.Changed(tc.from) {
				wantSince = now
			}
			if !got.Since.Equal(wantSince) {
				t.Errorf("On(%s): %s → %s, Since = %v, want %v", tc.e, tc.from.Mood, got.Mood, got.Since, wantSince)
			}
		})
	}
}

func TestTick(t *testing.T) {
	now := clockAt(10 * time.Hour)
	tests := []struct {
		name                    string
		valence, energy         int
		wantValence, wantEnergy int
		wantMood                string
	}{
		{"calm stays calm", 0, 0, 0, 0, neutral},
		{"excitement fades", 3, 3, 2, 2, happy},
		{"gloom lifts", -3, 1, -2, 0, neutral},
		{"grumpiness calms", -2, 3, -1, 2, grumpy},
		{"interest fades", 0, 2, 0, 1, neutral},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := State{Valence: tc.valence, Energy: tc.energy, LastChat: now, Since: now}
			got := s.Tick(now, testConfig)
			if got.Valence != tc.wantValence || got.Energy != tc.wantEnergy || got.Mood != tc.wantMood {
				t.Errorf("Tick of v%d e%d = v%d e%d %s, want v%d e%d %s", tc.valence, tc.energy,
					got.Valence, got.Energy, got.Mood, tc.wantValence, tc.wantEnergy, tc.wantMood)
			}
		})
	}
}

func TestClamp(t *testing.T) {
	now := clockAt(10 * time.Hour)
	tests := []struct {
		name                    string
		from                    State
		apply                   func(State) State
		wantValence, wantEnergy int
	}{
		{"valence at the top", State{Valence: 5, Energy: 5}, on(Promoted, now), 5, 5},
		{"valence at the bottom", State{Valence: -5}, on(Quarantined, now), -5, 0},
		{"energy at the top", State{Energy: 5}, on(OwnerMessage, now), 1, 5},
		{"damaged high", State{Valence: 100, Energy: 100}, on(TurnOK, now), 5, 5},
		{"damaged low", State{Valence: -100, Energy: -7}, on(TurnFailed, now), -5, 0},
		{"damaged extremes", State{Valence: math.MinInt, Energy: math.MaxInt}, on(Promoted, now), -3, 5},
		{"tick clamps before fading", State{Valence: -100, Energy: 100}, tick(now), -4, 4},
		{"tick at rest", State{Valence: 0, Energy: 0}, tick(now), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.apply(tc.from)
			if got.Valence != tc.wantValence || got.Energy != tc.wantEnergy {
				t.Errorf("from v%d e%d: got v%d e%d, want v%d e%d", tc.from.Valence, tc.from.Energy,
					got.Valence, got.Energy, tc.wantValence, tc.wantEnergy)
			}
		})
	}
}

func on(e Event, now time.Time) func(State) State {
	return func(s State) State { return s.On(e, now, testConfig) }
}

func tick(now time.Time) func(State) State {
	return func(s State) State { return s.Tick(now, testConfig) }
}

func TestDamagedState(t *testing.T) {
	now := clockAt(10 * time.Hour)
	future := now.Add(48 * time.Hour)
	tests := []struct {
		name  string
		from  State
		apply func(State) State
		cfg   Config
	}{
		{"zero state, tick", State{}, tick(now), testConfig},
		{"zero state, event", State{}, on(Denied, now), testConfig},
		{"unknown mood", State{Mood: "purple", Why: "?", LastChat: now, Since: now}, tick(now), testConfig},
		{"times in the future", State{Mood: neutral, LastChat: future, Since: future}, on(TurnOK, now), testConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.apply(tc.from)
			if !faces.Builtin().Has(got.Mood) || got.Why == "" {
				t.Errorf("%+v gave mood %q (%q), want a built-in face and a reason", tc.from, got.Mood, got.Why)
			}
			if got.LastChat.IsZero() || got.Since.IsZero() {
				t.Errorf("%+v gave last chat %v, since %v, want neither zero", tc.from, got.LastChat, got.Since)
			}
			if got.LastChat.After(now) || got.Since.After(now) {
				t.Errorf("%+v gave last chat %v, since %v, want neither after %v", tc.from, got.LastChat, got.Since, now)
			}
		})
	}

	t.Run("zero now", func(t *testing.T) {
		from := State{Valence: 99, Mood: "purple"}
		if got := from.Tick(time.Time{}, testConfig).On(OwnerMessage, time.Time{}, testConfig); !faces.Builtin().Has(got.Mood) {
			t.Errorf("%+v at the zero time gave mood %q, want a built-in face", from, got.Mood)
		}
	})

	odd := []struct {
		name string
		cfg  Config
	}{
		{"negative lonely", Config{Lonely: -time.Hour}},
		{"huge lonely", Config{Lonely: math.MaxInt64}},
		{"damaged window", Config{Night: clock.Window{Start: -5 * time.Hour, End: 100 * time.Hour}}},
		{"tiny lonely", Config{Lonely: time.Nanosecond}},
	}
	for _, tc := range odd {
		t.Run(tc.name, func(t *testing.T) {
			s := Initial(time.Time{}, tc.cfg).Tick(now, tc.cfg).On(OwnerMessage, now, tc.cfg).Tick(now.Add(time.Hour), tc.cfg)
			if !faces.Builtin().Has(s.Mood) {
				t.Errorf("with %+v the mood is %q, want a built-in face", tc.cfg, s.Mood)
			}
		})
	}
}

// TestDay drives the pet through a simulated day on a 5-minute reflex tick
// and checks when its mood became what.
func TestDay(t *testing.T) {
	happenings := []struct {
		at time.Duration
		e  Event
	}{
		{9 * time.Hour, OwnerMessage},
		{9*time.Hour + 20*time.Second, TurnOK},
		{13 * time.Hour, OwnerMessage},
		{13*time.Hour + 20*time.Second, TurnOK},
		{14 * time.Hour, OwnerMessage},
		{14*time.Hour + 20*time.Second, TurnFailed},
	}
	want := []string{
		"00:00:00 sleeping (night 23:00-07:00)",
		"07:00:00 neutral (nothing much going on)",
		"09:00:00 curious (the owner wrote)",
		"09:00:20 happy (a turn answered)",
		"09:05:00 neutral (nothing much going on)",
		"11:30:00 bored (no one wrote since 09:00)",
		"13:00:00 curious (the owner wrote)",
		"13:00:20 happy (a turn answered)",
		"13:05:00 neutral (nothing much going on)",
		"14:00:00 curious (the owner wrote)",
		"14:00:20 grumpy (a turn failed)",
		"14:05:00 neutral (nothing much going on)",
		"16:30:00 bored (no one wrote since 14:00)",
		"21:30:00 sad (lonely: no one wrote since 14:00)",
		"23:00:00 sleeping (night 23:00-07:00)",
	}
	const tickEvery = 5 * time.Minute
	// The same local day, on a UTC clock and on a clock 5:30 ahead of it.
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("IST", 5*3600+30*60)} {
		t.Run(loc.String(), func(t *testing.T) {
			start := time.Date(2025, time.March, 10, 0, 0, 0, 0, loc)
			var got []string
			var prev State
			record := func(s State) State {
				if s.Changed(prev) {
					got = append(got, fmt.Sprintf("%s %s (%s)", s.Since.Format(time.TimeOnly), s.Mood, s.Why))
				}
				prev = s
				return s
			}
			s := record(Initial(start, testConfig))
			next := 0
			for since := tickEvery; since <= 24*time.Hour; since += tickEvery {
				for ; next < len(happenings) && happenings[next].at < since; next++ {
					s = record(s.On(happenings[next].e, start.Add(happenings[next].at), testConfig))
				}
				s = record(s.Tick(start.Add(since), testConfig))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("the day went\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
		})
	}
}

func TestOwnerWakesThePetAtNight(t *testing.T) {
	s := Initial(clockAt(time.Hour), testConfig)
	steps := []struct {
		name  string
		apply func(State) State
		want  string
	}{
		{"asleep at 01:00", func(s State) State { return s }, sleeping},
		{"a denial at 02:00 does not wake it", on(Denied, clockAt(2*time.Hour)), sleeping},
		{"a tick keeps it asleep", tick(clockAt(2*time.Hour + 5*time.Minute)), sleeping},
		{"the owner writes at 02:06", on(OwnerMessage, clockAt(2*time.Hour+6*time.Minute)), curious},
		{"the reply comes", on(TurnOK, clockAt(2*time.Hour+6*time.Minute+20*time.Second)), happy},
		{"a denial while awake", on(Denied, clockAt(2*time.Hour+7*time.Minute)), curious},
		{"the next tick puts it to sleep", tick(clockAt(2*time.Hour + 10*time.Minute)), sleeping},
	}
	for _, step := range steps {
		prev := s
		s = step.apply(s)
		if s.Mood != step.want {
			t.Fatalf("%s: mood %q (%s), want %q", step.name, s.Mood, s.Why, step.want)
		}
		if s.Changed(prev) && s.Mood == sleeping && s.Why != "night 23:00-07:00" {
			t.Errorf("%s: why %q, want %q", step.name, s.Why, "night 23:00-07:00")
		}
	}
}

func TestInitial(t *testing.T) {
	india := time.FixedZone("IST", 5*3600+30*60)
	tests := []struct {
		name string
		now  time.Time
		cfg  Config
		want string
	}{
		{"morning", clockAt(8 * time.Hour), testConfig, neutral},
		{"night", clockAt(23*time.Hour + 30*time.Minute), testConfig, sleeping},
		{"UTC evening, night in IST", clockAt(18 * time.Hour).In(india), testConfig, sleeping},
		{"no night configured", clockAt(3 * time.Hour), Config{}, neutral},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Initial(tc.now, tc.cfg)
			if got.Mood != tc.want || !got.LastChat.Equal(tc.now) || !got.Since.Equal(tc.now) ||
				got.Valence != 0 || got.Energy != 0 {
				t.Errorf("Initial(%v) = %+v, want mood %q, calm, last chat and since at now", tc.now, got, tc.want)
			}
		})
	}
}

// TestNightSilenceIsNotLoneliness: the owner's silence overnight does not
// count, so the pet wakes calm and grows bored only Lonely after the night.
func TestNightSilenceIsNotLoneliness(t *testing.T) {
	lastChat := clockAt(-2 * time.Hour) // 22:00 the evening before
	s := State{LastChat: lastChat, Since: lastChat, Mood: neutral}
	tests := []struct {
		at      time.Duration
		want    string
		wantWhy string
	}{
		{7 * time.Hour, neutral, "nothing much going on"},
		{9*time.Hour + 29*time.Minute, neutral, "nothing much going on"},
		{9*time.Hour + 30*time.Minute, bored, "no one wrote since I woke"},
		{14*time.Hour + 30*time.Minute, sad, "lonely: no one wrote since I woke"},
	}
	for _, tc := range tests {
		if got := s.Tick(clockAt(tc.at), testConfig); got.Mood != tc.want || got.Why != tc.wantWhy {
			t.Errorf("Tick at %v after a chat at 22:00 = %q (%s), want %q (%s)", tc.at, got.Mood, got.Why, tc.want, tc.wantWhy)
		}
	}
}

func TestQuietReason(t *testing.T) {
	cfg := Config{Lonely: time.Hour} // no night: the silence runs across midnight
	paris := time.FixedZone("CET", 3600)
	now := clockAt(10 * time.Hour)
	tests := []struct {
		name     string
		lastChat time.Time
		want     string
	}{
		{"same day", clockAt(8*time.Hour + 45*time.Minute), "no one wrote since 08:45"},
		{"the day before", clockAt(-10 * time.Hour), "lonely: no one wrote since Mar 9 14:00"},
		{"persisted in another zone", clockAt(8 * time.Hour).In(paris), "no one wrote since 08:00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := State{LastChat: tc.lastChat, Since: tc.lastChat}.Tick(now, cfg)
			if got.Why != tc.want {
				t.Errorf("Tick at 10:00 after a chat at %v: why %q, want %q", tc.lastChat, got.Why, tc.want)
			}
		})
	}
}

func TestStateJSON(t *testing.T) {
	in := State{
		Valence:  -2,
		Energy:   3,
		LastChat: clockAt(9 * time.Hour),
		Mood:     grumpy,
		Why:      "a turn failed",
		Since:    clockAt(9*time.Hour + 20*time.Second),
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("Marshal(%+v): %v", in, err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatalf("Unmarshal(%s) into a map: %v", data, err)
	}
	for _, name := range []string{"valence", "energy", "last_chat", "mood", "why", "since"} {
		if _, ok := fields[name]; !ok {
			t.Errorf("Marshal(%+v) = %s, want a field %q", in, data, name)
		}
	}
	if len(fields) != 6 {
		t.Errorf("Marshal(%+v) = %s, want exactly 6 fields", in, data)
	}
	var out State
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("Unmarshal(%s): %v", data, err)
	}
	if out.Valence != in.Valence || out.Energy != in.Energy || out.Mood != in.Mood || out.Why != in.Why ||
		!out.LastChat.Equal(in.LastChat) || !out.Since.Equal(in.Since) {
		t.Errorf("Unmarshal(Marshal(%+v)) = %+v", in, out)
	}
}

// TestMoodsAreBuiltinFaces sweeps every feeling, silence and time of day
// through every event and the tick: each mood must be a built-in face.
func TestMoodsAreBuiltinFaces(t *testing.T) {
	builtin := faces.Builtin()
	for _, r := range rules {
		if !builtin.Has(r.mood) {
			t.Errorf("rule mood %q is not a built-in face", r.mood)
		}
	}
	seen := map[string]bool{}
	apply := []func(State, time.Time) State{
		func(s State, now time.Time) State { return s.Tick(now, testConfig) },
	}
	for e := range effects {
		apply = append(apply, func(s State, now time.Time) State { return s.On(e, now, testConfig) })
	}
	for valence := minValence; valence <= maxValence; valence++ {
		for energy := minEnergy; energy <= maxEnergy; energy++ {
			for _, silence := range []time.Duration{0, 3 * time.Hour, 9 * time.Hour} {
				for _, hour := range []time.Duration{3 * time.Hour, 16 * time.Hour} {
					now := clockAt(hour)
					for _, mood := range []string{neutral, sleeping} {
						s := State{Valence: valence, Energy: energy, LastChat: now.Add(-silence), Mood: mood, Since: now}
						for _, f := range apply {
							got := f(s, now)
							seen[got.Mood] = true
							if !builtin.Has(got.Mood) {
								t.Fatalf("from %+v: mood %q is not a built-in face", s, got.Mood)
							}
						}
					}
				}
			}
		}
	}
	for _, r := range rules {
		if !seen[r.mood] {
			t.Errorf("the sweep never reached mood %q, want every rule reachable", r.mood)
		}
	}
}
