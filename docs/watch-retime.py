"""Retimes FICS bughouse games as over-the-board play: a board's presses at least MIN s apart
(online premoves 0.1 s apart cannot happen over the board), file order kept across boards.
Rewrites the clock comments so that each board's elapsed time (both clocks' used time) is the
new press time. Same idea as `tandem eval tracker-sim --min-move-ms 1000`."""
import re, sys
MIN = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
src = open(sys.argv[1], encoding='latin-1').read()
games = re.split(r'(?=\[Event )', src)
out = []
tok = re.compile(r'(\d+)([AaBb])\.\s*([^\s{]+)\s*\{([\d.]+)\}')
for g in games:
    if not g.strip():
        continue
    m = re.search(r'\[TimeControl "(\d+)\+(\d+)"\]', g)
    head, _, body = g.partition('\n\n')
    if not m or not body:
        out.append(g); continue
    base = float(m.group(1))
    rem = {b: [base, base] for b in 'AB'}
    new = {b: [base, base] for b in 'AB'}
    last = 0.0
    prev = {'A': -10.0, 'B': -10.0}
    moves = []
    for t in tok.finditer(body):
        num, letter, san, secs = t.group(1), t.group(2), t.group(3), float(t.group(4))
        b = letter.upper(); c = 0 if letter.isupper() else 1
        rem[b][c] = secs
        old = 2 * base - rem[b][0] - rem[b][1]
        press = max(old, last + 0.001, prev[b] + MIN)
        r = 2 * base - press - new[b][1 - c]
        if r < 0:
            break
        new[b][c] = r
        last = press; prev[b] = press
        moves.append(f"{num}{letter}. {san}{{{r:.3f}}}")
    out.append(head + '\n\n' + ' '.join(moves) + ' *\n\n')
open(sys.argv[2], 'w', encoding='latin-1').write(''.join(out))
