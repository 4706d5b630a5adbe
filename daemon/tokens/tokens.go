package tokens

import (
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/schedule"
)

// Today is the start of now's local day: the instant from which today's
// tokens are summed, the same as the day of the self-driven turns'
// budget.
func Today(now time.Time) time.Time { return schedule.Midnight(now) }

// ThisMonth is the start of now's local month: its first day's midnight.
func ThisMonth(now time.Time) time.Time {
	y, m, _ := now.Date()
	// Noon of the first, whose day Midnight finds even where the clocks
	// jump over midnight.
	return schedule.Midnight(time.Date(y, m, 1, 12, 0, 0, 0, now.Location()))
}

// Price is what a provider charges for a million tokens, in the owner's
// currency; zero when the owner set none.
type Price struct {
	PromptPerMillion, CompletionPerMillion float64
}

// Set reports whether the owner gave a price.
func (p Price) Set() bool { return p.PromptPerMillion > 0 || p.CompletionPerMillion > 0 }

// Cost is what usage costs at p.
func (p Price) Cost(u contracts.Usage) float64 {
	return (float64(u.PromptTokens)*p.PromptPerMillion + float64(u.CompletionTokens)*p.CompletionPerMillion) / 1e6
}

// Prices are the prices the owner set, by provider name.
type Prices map[string]Price

// PricesOf reads the prices of the configured providers.
func PricesOf(providers []config.Provider) Prices {
	prices := Prices{}
	for _, p := range providers {
		if price := (Price{PromptPerMillion: p.PricePromptPerMillion, CompletionPerMillion: p.PriceCompletionPerMillion}); price.Set() {
			prices[p.Name] = price
		}
	}
	return prices
}

// Estimate is what usage costs at the prices, summed over the providers
// that have one; priced says whether any did.
func (ps Prices) Estimate(usage contracts.UsageByProvider) (cost float64, priced bool) {
	for _, u := range usage {
		if p, ok := ps[u.Provider]; ok {
			cost += p.Cost(u.Usage)
			priced = true
		}
	}
	return cost, priced
}
