package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
)

// scheduledAt is a valid schedule of text, due at next.
func scheduledAt(text string, next time.Time, every string) Scheduled {
	return Scheduled{Text: text, Next: next, Every: every, Transport: "telegram", Chat: "42", Created: epoch}
}

func sameSchedule(got, want Scheduled) bool {
	return got.ID == want.ID && got.Text == want.Text && got.Next.Equal(want.Next) && got.Every == want.Every &&
		got.Transport == want.Transport && got.Chat == want.Chat && got.Created.Equal(want.Created) && got.LastRun.Equal(want.LastRun) &&
		got.Outside == want.Outside
}

func scheduleIDs(schedules []Scheduled) []int64 {
	var ids []int64
	for _, sc := range schedules {
		ids = append(ids, sc.ID)
	}
	return ids
}

func TestScheduleLifecycle(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if next, ok, err := s.Schedules().NextDue(ctx); err != nil || ok || !next.IsZero() {
		t.Errorf("NextDue of a new store = %v, %v, %v, want none", next, ok, err)
	}
	if all, err := s.Schedules().All(ctx); err != nil || len(all) != 0 {
		t.Errorf("Schedules of a new store = %+v, %v, want none", all, err)
	}

	adds := []Scheduled{
		scheduledAt("check in", epoch.Add(3*time.Hour), "day"),
		scheduledAt("stretch", epoch.Add(time.Hour), ""),
		scheduledAt("drink water", epoch.Add(2*time.Hour), "90m"),
		// Set by a turn that had read a page: the mark is kept with it.
		{Text: "weekly review", Next: epoch.Add(time.Hour), Every: "weekly", Transport: "telegram", Chat: "42", Created: epoch, Outside: "https://example.com/page"},
	}
	want := make([]Scheduled, len(adds))
	for i, sc := range adds {
		sc.ID = 99 // ignored
		id, err := s.Schedules().Add(ctx, sc)
		if err != nil {
			t.Fatalf("Schedules().Add(%+v) = %v", sc, err)
		}
		want[i] = adds[i]
		want[i].ID = id
	}
	// Stored as given: package schedule writes and reads the form.

	all, err := s.Schedules().All(ctx)
	if err != nil || fmt.Sprint(scheduleIDs(all)) != fmt.Sprint([]int64{want[1].ID, want[3].ID, want[2].ID, want[0].ID}) {
		t.Fatalf("Schedules = %+v, %v, want by next, then id", all, err)
	}
	for _, got := range all {
		if w := want[got.ID-1]; !sameSchedule(got, w) {
			t.Errorf("schedule %d = %+v, want %+v", got.ID, got, w)
		}
	}
	if next, ok, err := s.Schedules().NextDue(ctx); err != nil || !ok || !next.Equal(epoch.Add(time.Hour)) {
		t.Errorf("NextDue = %v, %v, %v, want %v", next, ok, err, epoch.Add(time.Hour))
	}

	dues := []struct {
		at   time.Duration
		want []int64
	}{
		{0, nil},
		{time.Hour - time.Millisecond, nil},
		{time.Hour, []int64{want[1].ID, want[3].ID}},
		{2 * time.Hour, []int64{want[1].ID, want[3].ID, want[2].ID}},
		{24 * time.Hour, []int64{want[1].ID, want[3].ID, want[2].ID, want[0].ID}},
	}
	for _, d := range dues {
		got, err := s.Schedules().Due(ctx, epoch.Add(d.at))
		if err != nil || fmt.Sprint(scheduleIDs(got)) != fmt.Sprint(d.want) {
			t.Errorf("Schedules().Due(epoch+%v) = %v, %v, want %v", d.at, scheduleIDs(got), err, d.want)
		}
	}

	// The one-off ran: it is gone. The interval ran: it moves on and
	// remembers the run. The weekly one was skipped: it moves on, no run.
	ran := epoch.Add(time.Hour + time.Second)
	if err := s.Schedules().Reschedule(ctx, want[1].ID, time.Time{}, ran); err != nil {
		t.Errorf("Reschedule of a one-off = %v", err)
	}
	if err := s.Schedules().Reschedule(ctx, want[2].ID, epoch.Add(3*time.Hour+30*time.Minute), ran); err != nil {
		t.Errorf("Reschedule of an interval = %v", err)
	}
	if err := s.Schedules().Reschedule(ctx, want[3].ID, epoch.Add(169*time.Hour), time.Time{}); err != nil {
		t.Errorf("Reschedule of a skipped occurrence = %v", err)
	}
	all, _ = s.Schedules().All(ctx)
	if fmt.Sprint(scheduleIDs(all)) != fmt.Sprint([]int64{want[0].ID, want[2].ID, want[3].ID}) {
		t.Fatalf("Schedules after the runs = %v, want %v", scheduleIDs(all), []int64{want[0].ID, want[2].ID, want[3].ID})
	}
	if got := all[1]; !got.Next.Equal(epoch.Add(3*time.Hour+30*time.Minute)) || !got.LastRun.Equal(ran) {
		t.Errorf("interval after its run = %+v, want next at +3h30m and last run %v", got, ran)
	}
	if got := all[2]; !got.LastRun.IsZero() {
		t.Errorf("weekly after a skip = %+v, want no last run", got)
	}
	// Skipping again keeps an earlier run.
	if err := s.Schedules().Reschedule(ctx, want[2].ID, epoch.Add(5*time.Hour), time.Time{}); err != nil {
		t.Fatal(err)
	}
	all, _ = s.Schedules().All(ctx)
	if got := all[1]; got.ID != want[2].ID || !got.LastRun.Equal(ran) {
		t.Errorf("interval after a skip = %+v, want its last run %v kept", got, ran)
	}

	cancelled, err := s.Schedules().Cancel(ctx, want[0].ID)
	if err != nil || !sameSchedule(cancelled, want[0]) {
		t.Errorf("Schedules().Cancel(%d) = %+v, %v, want %+v", want[0].ID, cancelled, err, want[0])
	}
	if _, err := s.Schedules().Cancel(ctx, want[0].ID); !errors.Is(err, ErrNoSchedule) {
		t.Errorf("Schedules().Cancel of a cancelled schedule = %v, want ErrNoSchedule", err)
	}
	for _, id := range []int64{want[0].ID, want[1].ID, 0, -1, 1000} {
		if err := s.Schedules().Reschedule(ctx, id, epoch, epoch); !errors.Is(err, ErrNoSchedule) {
			t.Errorf("Reschedule(%d) of no live schedule = %v, want ErrNoSchedule", id, err)
		}
		if err := s.Schedules().Reschedule(ctx, id, time.Time{}, epoch); !errors.Is(err, ErrNoSchedule) {
			t.Errorf("Reschedule(%d) to none of no live schedule = %v, want ErrNoSchedule", id, err)
		}
	}
	if next, ok, err := s.Schedules().NextDue(ctx); err != nil || !ok || !next.Equal(epoch.Add(5*time.Hour)) {
		t.Errorf("NextDue at the end = %v, %v, %v, want %v", next, ok, err, epoch.Add(5*time.Hour))
	}

	// A new schedule never takes a cancelled one's id.
	id, err := s.Schedules().Add(ctx, scheduledAt("again", epoch, ""))
	if err != nil || id <= want[3].ID {
		t.Errorf("Schedules().Add after cancelling = %d, %v, want an id above %d", id, err, want[3].ID)
	}
}

func TestAddScheduleRefusesBadInput(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		sc       Scheduled
		wantText string
	}{
		{"no text", scheduledAt("", epoch, ""), "no text"},
		{"blank text", scheduledAt(" \n\t", epoch, ""), "no text"},
		{"text too long", scheduledAt(strings.Repeat("x", contracts.MaxScheduleText+1), epoch, ""), "over the cap"},
		{"text not UTF-8", scheduledAt("hi \xff", epoch, ""), "UTF-8"},
		{"no time", scheduledAt("hi", time.Time{}, ""), "no time"},
		{"every too long", scheduledAt("hi", epoch, strings.Repeat("9", MaxEvery+1)), "over the cap"},
		{"every not UTF-8", scheduledAt("hi", epoch, "\xff"), "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := s.Schedules().Add(ctx, tt.sc)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Schedules().Add(%+v) = %d, %v, want an error mentioning %q", tt.sc, id, err, tt.wantText)
			}
		})
	}
	if all, err := s.Schedules().All(ctx); err != nil || len(all) != 0 {
		t.Errorf("after the refused adds, Schedules = %+v, %v, want none", all, err)
	}
}

func TestScheduleCap(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var ids []int64
	for i := range MaxSchedules {
		id, err := s.Schedules().Add(ctx, scheduledAt(fmt.Sprint("reminder ", i), epoch.Add(time.Duration(i)*time.Minute), ""))
		if err != nil {
			t.Fatalf("Schedules().Add number %d = %v", i+1, err)
		}
		ids = append(ids, id)
	}
	if _, err := s.Schedules().Add(ctx, scheduledAt("one too many", epoch, "")); !errors.Is(err, ErrTooManySchedules) {
		t.Errorf("Schedules().Add over the cap = %v, want ErrTooManySchedules", err)
	}
	// A one-off that ran frees its place.
	if err := s.Schedules().Reschedule(ctx, ids[0], time.Time{}, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Schedules().Add(ctx, scheduledAt("in its place", epoch, "")); err != nil {
		t.Errorf("Schedules().Add after one ran = %v, want room for one", err)
	}
	if all, _ := s.Schedules().All(ctx); len(all) != MaxSchedules {
		t.Errorf("%d schedules live, want %d", len(all), MaxSchedules)
	}
}

func TestReadOnlySchedulesAndKV(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	writer := openStore(t, l)
	id, err := writer.Schedules().Add(ctx, scheduledAt("check in", epoch, "day"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Put(ctx, "mood", []byte("content")); err != nil {
		t.Fatal(err)
	}
	if err := writer.Turns().Start(ctx, TurnStart{ID: "t1", Kind: "scheduled", Started: epoch}); err != nil {
		t.Fatal(err)
	}
	reader, err := OpenReadOnly(l)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	if all, err := reader.Schedules().All(ctx); err != nil || len(all) != 1 || all[0].ID != id {
		t.Errorf("read-only Schedules = %+v, %v, want schedule %d", all, err, id)
	}
	if due, err := reader.Schedules().Due(ctx, epoch); err != nil || len(due) != 1 {
		t.Errorf("read-only Schedules().Due = %+v, %v, want one", due, err)
	}
	if next, ok, err := reader.Schedules().NextDue(ctx); err != nil || !ok || !next.Equal(epoch) {
		t.Errorf("read-only NextDue = %v, %v, %v, want %v", next, ok, err, epoch)
	}
	if n, last, err := reader.Turns().OfKindSince(ctx, "scheduled", epoch); err != nil || n != 1 || !last.Equal(epoch) {
		t.Errorf("read-only Turns().OfKindSince = %d, %v, %v, want 1, %v", n, last, err, epoch)
	}
	if v, ok, err := reader.Get(ctx, "mood"); err != nil || !ok || string(v) != "content" {
		t.Errorf("read-only Get = %q, %v, %v, want content", v, ok, err)
	}

	_, addErr := reader.Schedules().Add(ctx, scheduledAt("more", epoch, ""))
	_, cancelErr := reader.Schedules().Cancel(ctx, id)
	writes := map[string]error{
		"Schedules().Add":    addErr,
		"Reschedule":         reader.Schedules().Reschedule(ctx, id, epoch.Add(time.Hour), epoch),
		"Schedules().Cancel": cancelErr,
		"Put":                reader.Put(ctx, "mood", []byte("grumpy")),
	}
	for name, err := range writes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
		}
	}
	if all, _ := writer.Schedules().All(ctx); len(all) != 1 || !all[0].Next.Equal(epoch) {
		t.Errorf("schedules after the refused writes = %+v, want schedule %d unchanged", all, id)
	}
	if v, _, _ := writer.Get(ctx, "mood"); string(v) != "content" {
		t.Errorf("mood after the refused Put = %q, want content", v)
	}
}

// TestUpgradeToSchedules opens a database at schema version 6, as the
// release before schedules left it, with today's code.
func TestUpgradeToSchedules(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = migrations[:6]
	before := openStore(t, l)
	if err := before.Turns().Start(ctx, TurnStart{ID: "old", Kind: "scheduled", Started: epoch}); err != nil {
		t.Fatal(err)
	}
	// As the version 6 code queued a reply: today's Enqueue needs a newer
	// schema.
	if _, err := before.db.Exec(`INSERT INTO transport_outbox (transport, kind, body, not_before, created_at) VALUES ('telegram', 'reply', 'hi', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := before.db.Exec(`SELECT 1 FROM schedules`); err == nil {
		t.Fatal("a version 6 database already has the schedules table; the test proves nothing")
	}
	before.Close()
	migrations = saved

	s := openStore(t, l)
	if v := userVersion(t, s.db.DB); v != len(migrations) {
		t.Errorf("user_version after the upgrade = %d, want %d", v, len(migrations))
	}
	if n, last, err := s.Turns().OfKindSince(ctx, "scheduled", epoch); err != nil || n != 1 || !last.Equal(epoch) {
		t.Errorf("Turns().OfKindSince after the upgrade = %d, %v, %v, want the old turn", n, last, err)
	}
	if n, err := s.Queues().OutboxLen(ctx, "telegram"); err != nil || n != 1 {
		t.Errorf("OutboxLen after the upgrade = %d, %v, want the old reply kept", n, err)
	}
	if _, err := s.Schedules().Add(ctx, scheduledAt("check in", epoch, "day")); err != nil {
		t.Errorf("Schedules().Add after the upgrade = %v", err)
	}
	if err := s.Put(ctx, "mood", []byte("content")); err != nil {
		t.Errorf("Put after the upgrade = %v", err)
	}
}
