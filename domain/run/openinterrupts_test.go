package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOpenInterruptsListsOnlyTheUnansweredSortedByID(t *testing.T) {
	t.Parallel()
	r := waitingRun()
	later := r.Interrupts["interrupt_0123456789abcdef"]
	later.ID = "b-second"
	r.Interrupts[later.ID] = later
	earlier := later
	earlier.ID = "a-first"
	r.Interrupts[earlier.ID] = earlier

	open := r.OpenInterrupts()
	var ids []string
	for _, in := range open {
		ids = append(ids, in.ID)
		assert.Equal(t, InterruptOpen, in.Status)
	}
	assert.Equal(t, []string{"a-first", "b-second", "interrupt_0123456789abcdef"}, ids,
		"the resolved interrupt is left out and the open ones come in ID order")
	assert.Equal(t, "decision", open[0].ResumeChannel)
}

func TestOpenInterruptsIsNilWhenNothingWaits(t *testing.T) {
	t.Parallel()
	var nilRun *Run
	for name, r := range map[string]*Run{"done": doneRun(), "nil": nilRun, "zero": {}} {
		assert.Nil(t, r.OpenInterrupts(), name)
	}
	r := waitingRun()
	delete(r.Interrupts, "interrupt_0123456789abcdef")
	assert.Nil(t, r.OpenInterrupts(), "only a resolved interrupt")
}
