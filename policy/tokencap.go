package policy

// TokenCap is the owner's daily token cap (budget.daily_token_cap); 0 is
// none. It is weighed before a turn of the owner's messages starts, never
// during one.
type TokenCap int

// Set reports whether there is a cap to weigh, so that the caller sums
// today's tokens only then.
func (c TokenCap) Set() bool { return c > 0 }

// Asks reports whether a turn of the owner's messages asks the owner
// before it starts, with today's turns at today tokens: at or over the
// cap. A turn that crosses the cap is not stopped; the next one asks.
func (c TokenCap) Asks(today int) bool { return c.Set() && today >= int(c) }
