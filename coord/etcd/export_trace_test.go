package etcdcoord

// SetTrace tells fn of each step of f's sessions ("granted", "registered",
// "read" with the revision read) and of each watch event of the assignment
// ("event" with its revision) as it arrives. Call it before Run.
func SetTrace(f *Follower, fn func(step string, rev int64)) { f.trace = fn }
