package restapi

import (
	"crypto/md5" //nolint:gosec // k6's group and check ids are MD5 hex, not a security use
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/buzzload/buzzload/engine/metrics"
)

// groupSeparator joins group names into a path (k6: root "", then "::a").
const groupSeparator = "::"

type check struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Name   string `json:"name"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

type groupAttributes struct {
	Path   string  `json:"path"`
	Name   string  `json:"name"`
	Checks []check `json:"checks"`
}

type ref struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

type groupRelationships struct {
	Groups struct {
		Data []ref `json:"data"`
	} `json:"groups"`
	Parent struct {
		Data *ref `json:"data"`
	} `json:"parent"`
}

type groupResource struct {
	Type          string             `json:"type"`
	ID            string             `json:"id"`
	Attributes    groupAttributes    `json:"attributes"`
	Relationships groupRelationships `json:"relationships"`
}

func md5Hex(s string) string {
	h := md5.Sum([]byte(s)) //nolint:gosec // see the import
	return hex.EncodeToString(h[:])
}

// groupTree lists the groups that ran, root first, each followed by its
// children in first-seen order (k6's flattening). Paths come from the
// group_duration samples and the checks' group tags.
func groupTree(snap *metrics.Snapshot) []*groupResource {
	byPath := map[string]*groupResource{}
	children := map[string][]string{} // parent path -> child paths, first seen first
	var add func(path string) *groupResource
	add = func(path string) *groupResource {
		if g, ok := byPath[path]; ok {
			return g
		}
		name := path
		var parent *groupResource
		if path != "" {
			i := strings.LastIndex(path, groupSeparator)
			parentPath := path[:max(i, 0)]
			parent = add(parentPath)
			name = path[i+len(groupSeparator):]
			children[parentPath] = append(children[parentPath], path)
		}
		g := &groupResource{Type: "groups", ID: md5Hex(path), Attributes: groupAttributes{Path: path, Name: name}}
		g.Relationships.Groups.Data = []ref{}
		if parent != nil {
			g.Relationships.Parent.Data = &ref{Type: "groups", ID: parent.ID}
			parent.Relationships.Groups.Data = append(parent.Relationships.Groups.Data, ref{Type: "groups", ID: g.ID})
		}
		byPath[path] = g
		return g
	}
	add("")
	if m := snap.Metric(metrics.GroupDurationName); m != nil {
		if gs := m.Group("group"); gs != nil {
			for _, row := range gs.Rows {
				if p := row.Values[0]; p == "" || strings.HasPrefix(p, groupSeparator) {
					add(p)
				}
			}
		}
	}
	if m := snap.Metric(metrics.ChecksName); m != nil {
		if gs := m.Group("group", "check"); gs != nil {
			for _, row := range gs.Rows {
				g := add(row.Values[0])
				c := check{Path: row.Values[0] + groupSeparator + row.Values[1], Name: row.Values[1]}
				c.ID = md5Hex(c.Path)
				if rs, ok := row.Sink.(*metrics.RateSink); ok {
					c.Passes, c.Fails = rs.Passes(), rs.Fails()
				}
				g.Attributes.Checks = append(g.Attributes.Checks, c)
			}
		}
	}
	// Depth-first from the root, children in the order they were seen.
	var out []*groupResource
	var walk func(string)
	walk = func(p string) {
		out = append(out, byPath[p])
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk("")
	return out
}

// getGroups writes every group, or the one with id (404 when none).
func getGroups(run Run, w http.ResponseWriter, id string, one bool) {
	snap, _ := run.Metrics()
	groups := groupTree(snap)
	if !one {
		writeDoc(w, http.StatusOK, document[[]*groupResource]{Data: groups})
		return
	}
	for _, g := range groups {
		if g.ID == id {
			writeDoc(w, http.StatusOK, document[*groupResource]{Data: g})
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found", "No group with that ID was found")
}
