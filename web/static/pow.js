// rushline proof of work for joins to events with challenge: pow, shared by
// the waiting room (app.js) and the practice page (practice.js).
import { api, enc } from '/lib.js';

// proveWork fetches event eventId's challenge and solves it in a Web Worker
// (pow-worker.js), calling progress(pct) as it goes (the chance of having
// found a solution by now); it returns the join's challenge and solution.
export async function proveWork(eventId, progress) {
  const c = await api('GET', `/events/${enc(eventId)}/challenge`);
  const expected = 2 ** c.bits;
  progress(0);
  const solution = await new Promise((resolve, reject) => {
    const w = new Worker('/pow-worker.js');
    w.onmessage = (e) => {
      if (e.data.solution === undefined) {
        progress(Math.min(99, Math.floor(100 * (1 - Math.exp(-e.data.tried / expected)))));
        return;
      }
      w.terminate();
      resolve(e.data.solution);
    };
    w.onerror = (e) => { w.terminate(); reject(new Error(e.message || 'the proof-of-work worker failed')); };
    w.postMessage({ challenge: c.challenge, bits: c.bits });
  });
  progress(100);
  return { challenge: c.challenge, solution };
}
