package venuedoc

import (
	"fmt"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// Row is what a path switch does to the orders resting on the book at one
// venue, in words, read from the profile's facts: one row of the
// resting-orders table (Table).
type Row struct {
	// Venue is the profile's Name.
	Venue string
	// CancelOnDisconnect says what a dropped connection cancels, whether it
	// is on by default, how it is controlled and what fires it.
	CancelOnDisconnect string
	// Preserve and Flatten say what leaving the old path in each fence mode
	// does to resting orders (FenceEffect).
	Preserve, Flatten string
	// DeadMan says whether a cancel-all-after timer must be armed from the
	// new path before the old one is fenced, and how.
	DeadMan string
	// Check lists what the user must check at this venue.
	Check []string
	// Sources are the public pages the row rests on.
	Sources []Link
}

// Link is a labelled public page.
type Link struct {
	Label string
	URL   string
}

// RestingOrders returns what a path switch does to resting orders at p's
// venue, from its CancelOnDisconnect, DeadMan and LookupBudget facts.
func RestingOrders(p venue.Profile) Row {
	r := Row{Venue: p.Name}
	c := p.CancelOnDisconnect
	r.CancelOnDisconnect = codText(p)
	r.Preserve = modeText(p, venue.Preserve)
	r.Flatten = modeText(p, venue.Flatten)
	r.DeadMan = deadManText(p)

	if !c.Known() {
		r.Check = append(r.Check, "whether a dropped connection cancels orders is not documented"+noteSuffix(c.Source)+
			": after every switch, compare every open order with the venue's open-order list")
	} else {
		v := c.Value
		if c.Basis == venue.BasisRequirement {
			r.Check = append(r.Check, "the cancel-on-disconnect fact is a rule for the client, not a documented behaviour: confirm it with the venue")
		}
		if v.Scope != venue.CODNone && v.OnByDefault {
			r.Check = append(r.Check, "on by default: any path that drops without the documented exit cancels its orders")
		}
		if v.Scope == venue.CODProfile || v.Scope == venue.CODAccount {
			r.Check = append(r.Check, fmt.Sprintf("flatten cancels every open order of the %s, including those placed over the new path, over other APIs and by other programs: re-quote them after the switch", v.Scope))
		}
		switch {
		case v.Scope != venue.CODNone && v.KeepOrders == "" && v.KeepAtLogon != "":
			r.Check = append(r.Check, "orders are kept only by a choice made at logon, which a switch cannot see: flatten is the default; choose preserve only for sessions that log on that way")
		case v.Scope != venue.CODNone && v.KeepOrders == "":
			r.Check = append(r.Check, "no documented way to leave without cancelling: preserve cannot promise anything here")
		}
		if c.Note != "" {
			r.Check = append(r.Check, c.Note)
		}
		r.Sources = append(r.Sources, Link{"cancel-on-disconnect", c.URL})
	}
	if dm, ok := p.DeadManTimer(); ok {
		r.Check = append(r.Check, "a lapse between the old path's last refresh and the new path's first cancels every order the timer covers: the switch must not open that gap")
		if dm.PerSymbol {
			r.Check = append(r.Check, "one timer per symbol: arm it for every symbol with resting orders")
		}
		if p.DeadMan.Note != "" {
			r.Check = append(r.Check, p.DeadMan.Note)
		}
		r.Sources = append(r.Sources, Link{"dead-man timer", p.DeadMan.URL})
	}
	if b := p.LookupBudget; b.Reliable() && b.Value.Exceeded == venue.SessionTerminated {
		r.Check = append(r.Check, "keep the reconcile's lookups within the rate budget: running out terminates the session, which fires cancel-on-disconnect on the new path")
		r.Sources = append(r.Sources, Link{"rate limits", b.URL})
	}
	return r
}

func codText(p venue.Profile) string {
	c := p.CancelOnDisconnect
	if !c.Known() {
		return "not documented"
	}
	v := c.Value
	if v.Scope == venue.CODNone {
		return "none"
	}
	var b strings.Builder
	if v.Scope == venue.CODProfile || v.Scope == venue.CODAccount {
		fmt.Fprintf(&b, "cancels every open order of the %s", v.Scope)
	} else {
		fmt.Fprintf(&b, "cancels the %s's orders", v.Scope)
	}
	if v.OnByDefault {
		b.WriteString("; on by default")
	} else {
		b.WriteString("; off unless switched on")
	}
	if v.Control != "" {
		fmt.Fprintf(&b, "; control: %s", v.Control)
	}
	if v.Trigger != "" {
		fmt.Fprintf(&b, "; fired by: %s", v.Trigger)
	}
	if c.Basis != venue.BasisDocumented {
		fmt.Fprintf(&b, " (%s)", c.Basis)
	}
	return b.String()
}

func modeText(p venue.Profile, mode venue.FenceMode) string {
	effect, _ := p.FenceEffect(mode)
	c := p.CancelOnDisconnect
	switch effect {
	case venue.EffectNone:
		if c.Value.Scope == venue.CODNone {
			return "nothing cancelled: no cancel-on-disconnect"
		}
		if c.Value.KeepOrders == "" {
			return "nothing cancelled only if the session chose so at logon: " + c.Value.KeepAtLogon + " (a switch cannot see that choice: flatten is the default)"
		}
		if c.Value.KeepAtLogon != "" {
			return "nothing cancelled, if the old path leaves by: " + c.Value.KeepOrders + " (or if the session chose at logon: " + c.Value.KeepAtLogon + ")"
		}
		return "nothing cancelled, if the old path leaves by: " + c.Value.KeepOrders
	case venue.EffectOldPathOrders:
		return fmt.Sprintf("the old %s's orders cancelled (where cancel-on-disconnect is on)", c.Value.Scope)
	case venue.EffectAllOrders:
		return fmt.Sprintf("every open order of the %s cancelled, the new path's included (where cancel-on-disconnect is on)", c.Value.Scope)
	}
	if !c.Reliable() {
		return "unknown: reconcile every open order"
	}
	return "unknown: no documented way to leave without cancelling; reconcile every open order"
}

func deadManText(p venue.Profile) string {
	d := p.DeadMan
	dm, ok := p.DeadManTimer()
	if !ok {
		if d.Reliable() {
			return "none"
		}
		return "none documented"
	}
	var b strings.Builder
	b.WriteString("must move first: arm it from the new path before the old path is fenced")
	if dm.API != "" {
		fmt.Fprintf(&b, " (%s)", dm.API)
	}
	switch {
	case dm.Timeout > 0 && dm.Refresh > 0:
		fmt.Fprintf(&b, "; the venue recommends a %s timeout refreshed every %s", seconds(dm.Timeout), seconds(dm.Refresh))
	case dm.Timeout > 0:
		fmt.Fprintf(&b, "; the venue recommends a %s timeout", seconds(dm.Timeout))
	}
	if dm.PerSymbol {
		b.WriteString("; one timer per symbol")
	}
	return b.String()
}

// noteSuffix is a fact's note in parentheses, or nothing.
func noteSuffix(s venue.Source) string {
	if s.Note == "" {
		return ""
	}
	return " (" + s.Note + ")"
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// Table renders, as a Markdown table, what a path switch does to resting
// orders at each of the profiles, in each fence mode, whether a dead-man timer
// must move first, what to check, and the sources. The README's table of the
// shipped profiles is Table(venue.Shipped()).
func Table(ps []venue.Profile) string {
	var b strings.Builder
	b.WriteString("| venue | cancel-on-disconnect | preserve | flatten | dead-man timer | check | sources |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, p := range ps {
		r := RestingOrders(p)
		links := make([]string, 0, len(r.Sources))
		for _, l := range r.Sources {
			links = append(links, fmt.Sprintf("[%s](%s)", l.Label, l.URL))
		}
		src := strings.Join(links, ", ")
		if src == "" {
			src = "—"
		}
		check := strings.Join(r.Check, "; ")
		if check == "" {
			check = "—"
		}
		cells := []string{"`" + r.Venue + "`", r.CancelOnDisconnect, r.Preserve, r.Flatten, r.DeadMan, check, src}
		for i, c := range cells {
			cells[i] = cell(c)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// cell makes s safe inside one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
