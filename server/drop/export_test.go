package drop

// PlanOf exposes the crowd plan of d to tests, which check the crowd
// against it.
func (s *Service) PlanOf(d Drop) (*Plan, error) { return s.plan(d) }
