package audit

// Pressure is what the pressure phase reached.
type Pressure struct{}
