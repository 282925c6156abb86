package drop

import (
	"slices"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// Level is how fast a drop's crowd reacts to the opening and picks its seats.
type Level string

// The levels (API-next.md, "Practice drops"); scenarios/README.md gives their
// figures and where they come from.
const (
	LevelEasy   Level = "easy"
	LevelNormal Level = "normal"
	LevelHard   Level = "hard"
)

// Levels lists the levels, easiest first.
var Levels = []Level{LevelEasy, LevelNormal, LevelHard}

// Valid reports whether l is a known level.
func (l Level) Valid() bool { return slices.Contains(Levels, l) }

// Behaviour is how a level's virtual users act: people, and a share of
// macro-like users (scripts that press on a timer and pick a seat at once).
type Behaviour struct {
	// Reaction is a person's delay from being there at the opening (or
	// arriving later) to the press of "buy".
	Reaction scenario.Dist
	// Think is a person's delay from admission to the order, for a
	// scenario without order steps.
	Think scenario.Dist
	// Steps is a person's time at each order step (scenario.StepOrder's
	// names), for a scenario with steps: its delay from admission to the
	// order is the sum over the scenario's steps.
	Steps map[string]scenario.Dist
	// MacroShare (0..1) of the crowd are macro-like users.
	MacroShare    float64
	MacroReaction scenario.Dist
	MacroThink    scenario.Dist
	MacroSteps    map[string]scenario.Dist
}

// steps builds a level's step figures from (median, p90) pairs in
// scenario.StepOrder's order.
func steps(fig ...time.Duration) map[string]scenario.Dist {
	out := make(map[string]scenario.Dist, len(scenario.StepOrder))
	for i, name := range scenario.StepOrder {
		out[name] = lognormal(fig[2*i], fig[2*i+1])
	}
	return out
}

// macroSteps are every level's macro-like users at the steps: a script
// clicks each choice at once and reads the captcha by OCR.
var macroSteps = steps(40*ms, 100*ms, 600*ms, 1500*ms, 40*ms, 100*ms, 80*ms, 250*ms, 40*ms, 100*ms, 150*ms, 400*ms)

func lognormal(median, p90 time.Duration) scenario.Dist {
	return scenario.Dist{Kind: scenario.DistLognormal, Median: scenario.Duration(median), P90: scenario.Duration(p90)}
}

const ms = time.Millisecond

// behaviours are the levels' figures; scenarios/README.md ("Practice drop
// levels") explains them, and TestLevelTable keeps its table in step.
var behaviours = map[Level]Behaviour{
	// Casual visitors: not at the button when it opens; they notice, find
	// it and click (the keystroke-level model's M + P + B, about 2.5 s).
	LevelEasy: {
		Reaction: lognormal(1200*ms, 3500*ms),
		Think:    lognormal(6*time.Second, 15*time.Second),
		//          date             captcha          grade            seat             confirm          payment
		Steps: steps(2000*ms, 5000*ms, 4000*ms, 9000*ms, 1500*ms, 4000*ms, 3000*ms, 8000*ms, 1200*ms, 3000*ms, 4000*ms, 10000*ms),
	},
	// Fans on the page, watching the countdown: a choice reaction plus a
	// short pointing movement; a few run macros.
	LevelNormal: {
		Reaction:      lognormal(600*ms, 1500*ms),
		Think:         lognormal(3*time.Second, 8*time.Second),
		Steps:         steps(1200*ms, 3000*ms, 3000*ms, 6000*ms, 800*ms, 2000*ms, 1800*ms, 4500*ms, 700*ms, 1600*ms, 2500*ms, 6000*ms),
		MacroShare:    0.01,
		MacroReaction: lognormal(60*ms, 150*ms),
		MacroThink:    lognormal(300*ms, 800*ms),
		MacroSteps:    macroSteps,
	},
	// Trained practisers with the pointer on the button: a simple visual
	// reaction plus input and display lag; one in twenty runs a macro.
	LevelHard: {
		Reaction:      lognormal(280*ms, 550*ms),
		Think:         lognormal(1500*ms, 4*time.Second),
		Steps:         steps(600*ms, 1500*ms, 2000*ms, 3500*ms, 400*ms, 1000*ms, 900*ms, 2200*ms, 350*ms, 800*ms, 1300*ms, 3000*ms),
		MacroShare:    0.05,
		MacroReaction: lognormal(25*ms, 60*ms),
		MacroThink:    lognormal(120*ms, 300*ms),
		MacroSteps:    macroSteps,
	},
}

// Behaviour returns the level's figures; ok is false for an unknown level.
func (l Level) Behaviour() (Behaviour, bool) {
	b, ok := behaviours[l]
	return b, ok
}

// ReactionCDF is the share of the level's users (people and macros) who
// press within d of being there.
func (b Behaviour) ReactionCDF(d time.Duration) float64 {
	return (1-b.MacroShare)*b.Reaction.CDF(d) + b.MacroShare*b.MacroReaction.CDF(d)
}
