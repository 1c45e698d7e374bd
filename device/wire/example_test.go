package wire_test

import (
	"fmt"

	"github.com/solar-pipeline/solar/device/wire"
)

// The bucket's keys of a device: its current attempt, its state, and a
// device id that cannot be a key.
func ExampleAttemptKey() {
	attempt, _ := wire.AttemptKey("lab-01")
	state, _ := wire.StateKey("lab-01")
	fmt.Println(attempt, state)
	_, err := wire.AttemptKey("lab.01")
	fmt.Println(err != nil)
	// Output:
	// attempt.lab-01 state.lab-01
	// true
}
