package policy

// CanCreate is true on Windows: the box runs as a sandbox user whose
// rights the resolution does not predict.
func (OSFS) CanCreate(dir string) bool { return true }
