package report

import (
	"fmt"
)

// DurabilityReport is the audit's outcome.
type DurabilityReport struct {
	Acknowledged int64 `json:"acknowledged"` // auditable events acknowledged in the run
	Checked      int   `json:"checked"`      // of them, read back (all, or the sample)
	// FoundAuthor and FoundMember count the checked events each read path
	// returned; Missing are the checked events a path that answered did
	// not return (MissingIDs lists the first maxMissingIDs).
	FoundAuthor int      `json:"found_author"`
	FoundMember int      `json:"found_member"`
	Missing     int      `json:"missing"`
	MissingIDs  []string `json:"missing_ids,omitempty"`
	// Unverified are checked events one of the two reads could not be
	// made for (an error, the timeout): neither found missing nor verified.
	Unverified int     `json:"unverified,omitempty"`
	ReadErrors int     `json:"read_errors,omitempty"`
	FirstError string  `json:"first_error,omitempty"`
	Secs       float64 `json:"secs"`
}

// durabilityCheck is the audit as a check.
func durabilityCheck(d *DurabilityReport) Check {
	name := "durability audit"
	switch {
	case d == nil:
		return Check{Name: name, Level: CheckSkip, Detail: "off ([verify] sample = 0)"}
	case d.Missing > 0:
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("%d of %d acknowledged events checked are missing: %v", d.Missing, d.Checked, d.MissingIDs)}
	case d.Checked == 0:
		return Check{Name: name, Level: CheckSkip, Detail: "no acknowledged event of a stored kind in a channel"}
	case d.Unverified == d.Checked:
		// A run that could not check its writes did not pass them (issue
		// 43 L2: this was a skip).
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("no read answered: %s; none of %d acknowledged events could be checked", d.FirstError, d.Checked)}
	case d.Unverified > 0:
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("%d of %d checked events could not be read back (%s); the rest are there", d.Unverified, d.Checked, d.FirstError)}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf("all %d checked of %d acknowledged events read back as their author and as a member", d.Checked, d.Acknowledged)}
}
