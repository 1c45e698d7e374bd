// Package rollout is the pure engine of a progressive rollout: a policy
// (ordered waves with deadlines and thresholds, pauses, approvals, windows,
// halt or roll back), the members it governs with what their reports say,
// the rollout's state so far and the current time go in; the next state and
// a decision per member (admitted, held, rolled back, with the reason) come
// out. It does no I/O and reads no clock: the cluster side (solar publish,
// solar controller, from TargetReports) and the device side feed it, store
// its State where they keep it, and act on its decisions.
//
// A rollout starts when the content to roll out changes (a new revision):
// Start assigns the members to the waves once, in order; Next admits the
// first wave, and each later wave only after the one before it passed (at
// least its success threshold of members reported healthy at the revision,
// no more than its error threshold failed), its pause elapsed or its
// approval came, and inside a window. A member fails when its report says
// Failed (no retry coming) or Stale, or it is not healthy by its wave's
// progress deadline; nothing passes on a timer. A wave past its error
// threshold halts the rollout and, with RollBack, rolls back every member
// admitted to the revision.
package rollout
