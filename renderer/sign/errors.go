package sign

import (
	"errors"
	"fmt"
)

// The sentinel errors of the package, as errors.Is finds them.

// errTooMany stops a listing past maxReferrers.
var errTooMany = fmt.Errorf("more than %d signatures", maxReferrers)

// What ParseKey finds wrong with an encrypted key (cosign's own, or PKCS
// #8 encrypted): the caller names where the password comes from.
var (
	ErrNoPassword    = errors.New("the key is encrypted and no password was given")
	ErrWrongPassword = errors.New("the password does not decrypt the key")
)

// What Check finds wrong with a chart's signatures. ErrUnbound and
// ErrElsewhere come wrapped in ErrBadSignature: the key signed the
// manifest, but not as the repository and version it is found at.
var (
	ErrUnsigned     = errors.New("not signed")
	ErrBadSignature = errors.New("no signature verifies with the keys given")
	// ErrUnbound: signed before Solar named the repository and version
	// in its signatures; publishing again signs it anew.
	ErrUnbound = errors.New("signed by an older solar, without naming its repository and version: publish it again to sign it anew")
	// ErrElsewhere: signed as another repository or version (a signed
	// chart moved to another Target's repository, or an old version tagged
	// as a newer one).
	ErrElsewhere = errors.New("signed for another repository or version")
)

// errNotSignature: a referrer that is not a signature as cosign reads them.
var errNotSignature = errors.New("not a signature")
