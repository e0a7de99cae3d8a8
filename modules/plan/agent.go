package plan

import "fmt"

func newAgent(s *sim, g int) (actor, error) {
	return nil, fmt.Errorf("plan: agents are not simulated yet (client %d)", g)
}
