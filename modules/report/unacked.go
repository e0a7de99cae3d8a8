package report

import "fmt"

// maxMissingIDs bounds the ids a report lists (missing, refused).
const maxMissingIDs = 20

// UnackedReport is what became of the events the relay never acknowledged.
type UnackedReport struct {
	Total      int64 `json:"total"`      // publishes of stored kinds refused or unanswered (throttles aside)
	Refused    int   `json:"refused"`    // of the kept ones, refused by the relay
	Unanswered int   `json:"unanswered"` // of the kept ones, never answered
	// Delivered are kept events delivered to a subscriber after their
	// publish settled; Stored those the relay returned when read back.
	DeliveredRefused    int      `json:"delivered_refused"`
	DeliveredUnanswered int      `json:"delivered_unanswered"`
	StoredRefused       int      `json:"stored_refused"`
	StoredUnanswered    int      `json:"stored_unanswered"`
	Checked             int      `json:"checked"`               // read back (the rest: no member to read as, a read that failed)
	RefusedIDs          []string `json:"refused_ids,omitempty"` // refused yet delivered or stored (the first maxMissingIDs)
	FirstError          string   `json:"first_error,omitempty"`
}

// unackedCheck: a refused event that reached readers fails; an unanswered
// one that did warns (an acknowledgement lost under load).
func unackedCheck(u *UnackedReport) Check {
	name := "never-acknowledged events"
	switch {
	case u == nil || u.Total == 0:
		return Check{Name: name, Level: CheckSkip, Detail: "every publish of a stored kind was acknowledged (or throttled)"}
	case u.DeliveredRefused+u.StoredRefused > 0:
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("the relay refused %d events yet delivered %d and stored %d of them: %v",
			u.Refused, u.DeliveredRefused, u.StoredRefused, u.RefusedIDs)}
	case u.DeliveredUnanswered+u.StoredUnanswered > 0:
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("%d publishes got no answer, yet %d were delivered and %d stored: acknowledgements lost (their authors saw a failure)",
			u.Unanswered, u.DeliveredUnanswered, u.StoredUnanswered)}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf("%d refused or unanswered publishes: none delivered after, none stored (%d read back)", u.Total, u.Checked)}
}
