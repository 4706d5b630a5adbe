package tokens

import (
	"math"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
)

func usage(prompt, completion int) contracts.Usage {
	return contracts.Usage{PromptTokens: prompt, CompletionTokens: completion}
}

func TestCost(t *testing.T) {
	for _, tc := range []struct {
		price Price
		usage contracts.Usage
		want  float64
	}{
		{Price{}, usage(1_000_000, 1_000_000), 0},
		{Price{PromptPerMillion: 0.15, CompletionPerMillion: 0.6}, usage(1_000_000, 0), 0.15},
		{Price{PromptPerMillion: 0.15, CompletionPerMillion: 0.6}, usage(0, 1_000_000), 0.6},
		{Price{PromptPerMillion: 0.15, CompletionPerMillion: 0.6}, usage(2000, 100), 0.00036},
		{Price{PromptPerMillion: 3, CompletionPerMillion: 15}, usage(123_456, 7_890), 0.488718},
		{Price{CompletionPerMillion: 10_000}, usage(0, 1_000_000_000), 10_000_000},
	} {
		if got := tc.price.Cost(tc.usage); math.Abs(got-tc.want) > 1e-12*max(1, tc.want) {
			t.Errorf("%+v.Cost(%+v) = %v, want %v", tc.price, tc.usage, got, tc.want)
		}
	}
}

func TestEstimateCountsOnlyThePricedProviders(t *testing.T) {
	prices := PricesOf([]config.Provider{
		{Name: "openrouter", PricePromptPerMillion: 0.15, PriceCompletionPerMillion: 0.6},
		{Name: "local"}, // no price: free, or the owner did not say
	})
	for _, tc := range []struct {
		usage  contracts.UsageByProvider
		cost   float64
		priced bool
	}{
		{nil, 0, false},
		{contracts.UsageByProvider{{Provider: "local", Usage: usage(5000, 500)}}, 0, false},
		{contracts.UsageByProvider{{Provider: "openrouter", Usage: usage(1_000_000, 1_000_000)}, {Provider: "local", Usage: usage(5000, 500)}}, 0.75, true},
		{contracts.UsageByProvider{{Provider: "gone", Usage: usage(1_000_000, 0)}}, 0, false},
	} {
		cost, priced := prices.Estimate(tc.usage)
		if math.Abs(cost-tc.cost) > 1e-12 || priced != tc.priced {
			t.Errorf("Estimate(%+v) = %v, %v, want %v, %v", tc.usage, cost, priced, tc.cost, tc.priced)
		}
	}
}

// TestTheDayAndTheMonthStartAtLocalMidnight: on a fake clock walked
// across a day's end, a month's end and a change of the clocks, today
// and this month start at the local midnight the pet counts its days
// from — never at UTC's.
func TestTheDayAndTheMonthStartAtLocalMidnight(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Santiago's clocks jumped from 24:00 to 01:00 on 2022-09-11: that
	// day had no midnight.
	santiago, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 3, 31, 23, 59, 59, 0, berlin))
	for _, tc := range []struct {
		step         time.Duration
		today, month time.Time
	}{
		{0, time.Date(2026, 3, 31, 0, 0, 0, 0, berlin), time.Date(2026, 3, 1, 0, 0, 0, 0, berlin)},
		// A second later it is April in Berlin, still March 31 in UTC.
		{time.Second, time.Date(2026, 4, 1, 0, 0, 0, 0, berlin), time.Date(2026, 4, 1, 0, 0, 0, 0, berlin)},
		{23*time.Hour + 59*time.Minute, time.Date(2026, 4, 1, 0, 0, 0, 0, berlin), time.Date(2026, 4, 1, 0, 0, 0, 0, berlin)},
		{time.Minute, time.Date(2026, 4, 2, 0, 0, 0, 0, berlin), time.Date(2026, 4, 1, 0, 0, 0, 0, berlin)},
	} {
		clk.Advance(tc.step)
		now := clk.Now().In(berlin)
		if got := Today(now); !got.Equal(tc.today) {
			t.Errorf("Today(%v) = %v, want %v", now, got, tc.today)
		}
		if got := ThisMonth(now); !got.Equal(tc.month) {
			t.Errorf("ThisMonth(%v) = %v, want %v", now, got, tc.month)
		}
	}
	// The day with no midnight starts when the jump lands, at 01:00.
	now := time.Date(2022, 9, 11, 15, 0, 0, 0, santiago)
	if got, want := Today(now), time.Date(2022, 9, 11, 1, 0, 0, 0, santiago); !got.Equal(want) {
		t.Errorf("Today(%v) = %v, want %v", now, got, want)
	}
	// And that day's month starts at its first day's midnight, as ever.
	if got, want := ThisMonth(time.Date(2022, 9, 20, 9, 0, 0, 0, santiago)), time.Date(2022, 9, 1, 0, 0, 0, 0, santiago); !got.Equal(want) {
		t.Errorf("ThisMonth in Santiago's September 2022 = %v, want %v", got, want)
	}
}
