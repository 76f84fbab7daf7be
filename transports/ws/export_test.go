package ws

import "time"

// The reconnect policy is unexported; its tests drive it through these names.

type ReconnectPolicy = reconnectPolicy

type RoundView = roundView

const MinEmptyRoundWait = minEmptyRoundWait

func DefaultBackoff() Backoff { return defaultBackoff() }

func BackoffCeiling(b Backoff, attempt int) time.Duration { return b.ceiling(attempt) }

func BackoffDelay(b Backoff, attempt int, u float64) time.Duration { return b.delay(attempt, u) }
