// Package telegram is shelldon's Telegram transport: it long-polls the Bot
// API, hands the owner's text to core over the bus, sends core's replies
// back, and turns approval requests into inline Approve/Deny buttons whose
// taps become decisions. While a turn runs tools it keeps one status
// message of what the turn is doing, and it sets 👀 on the owner's
// message once core has kept it. Only the configured user ids are
// listened to.
package telegram
