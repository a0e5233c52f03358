// learnbook's opening explorer: a chessground board whose legal moves come
// from chess.js, over the server's lichess-style `/masters` API.
//
// State: a start position (the standard one or a pasted FEN), the moves of
// the line from it, and how many of them are played (`ply`). The URL hash
// holds all three (and the board's orientation), so a position can be
// linked and reloaded. Each position is asked for as lichess's explorer is:
// `fen` = the start, `play` = the moves played since, so the server finds
// opening names along the line.
//
// Test hooks: `body[data-ready="1"]` once the current position's answer is
// rendered; `#moves tbody tr[data-uci]`, `#opening`, `#line .mv[data-ply]`,
// `#fen` (input: the current FEN), `#board[data-fen]` (the board's piece
// placement as chessground holds it), `#back`, `#forward`, `#flip`,
// `#paste` + `#paste-go`, `#paste-error`, `#top-games tr[data-id]`.

import { Chessground } from './vendor/chessground.min.js';
import { Chess, DEFAULT_POSITION } from './vendor/chess.js';

const MOVES = 12;
const TOP_GAMES = 15;

const $ = (id) => document.getElementById(id);
const el = {
  body: document.body,
  board: $('board'),
  promotion: $('promotion'),
  line: $('line'),
  fen: $('fen'),
  back: $('back'),
  forward: $('forward'),
  first: $('first'),
  last: $('last'),
  reset: $('reset'),
  flip: $('flip'),
  paste: $('paste'),
  pasteGo: $('paste-go'),
  pasteError: $('paste-error'),
  opening: $('opening'),
  status: $('status'),
  movesBox: $('moves-box'),
  movesBody: document.querySelector('#moves tbody'),
  movesFoot: document.querySelector('#moves tfoot'),
  games: document.querySelector('#top-games tbody'),
  sTurn: $('s-turn'),
  sGames: $('s-games'),
  sValue: $('s-value'),
  sChoice: $('s-choice'),
  sAnalysis: $('s-analysis'),
  sDeviation: $('s-deviation'),
  pgnPanel: $('pgn-panel'),
  pgnTitle: $('pgn-title'),
  pgnText: $('pgn-text'),
  pgnOpen: $('pgn-open'),
  pgnLoad: $('pgn-load'),
  pgnClose: $('pgn-close'),
};

// ---------------------------------------------------------------- state

const state = {
  start: DEFAULT_POSITION,
  // {uci, san, color ('w'|'b'), number (full move), from, to, after (FEN)}
  moves: [],
  ply: 0,
  orientation: 'white',
};

const fenAt = (ply) => (ply === 0 ? state.start : state.moves[ply - 1].after);
const currentFen = () => fenAt(state.ply);

// A line from `start` through `ucis`, stopping at the first illegal move.
// Returns {start, moves, error}.
function replay(start, ucis) {
  const chess = new Chess(start);
  const moves = [];
  for (const uci of ucis) {
    const m = tryMove(chess, uci);
    if (!m) return { moves, error: `illegal move ${uci}` };
    moves.push(m);
  }
  return { moves, error: null };
}

function tryMove(chess, uci) {
  if (!/^[a-h][1-8][a-h][1-8][qrbn]?$/.test(uci)) return null;
  const number = chess.moveNumber();
  try {
    const m = chess.move({ from: uci.slice(0, 2), to: uci.slice(2, 4), promotion: uci[4] });
    return moveRecord(m, number);
  } catch {
    return null;
  }
}

function moveRecord(m, number) {
  return { uci: m.lan, san: m.san, color: m.color, number, from: m.from, to: m.to, after: m.after };
}

// ---------------------------------------------------------------- board

const ground = Chessground(el.board, {
  fen: DEFAULT_POSITION,
  orientation: 'white',
  coordinates: true,
  animation: { enabled: true, duration: 160 },
  highlight: { lastMove: true, check: true },
  movable: { free: false, showDests: true, events: { after: onBoardMove } },
  premovable: { enabled: false },
  draggable: { enabled: true, showGhost: true },
  drawable: { enabled: true, visible: true },
});

function legalDests(chess) {
  const dests = new Map();
  for (const m of chess.moves({ verbose: true })) {
    if (!dests.has(m.from)) dests.set(m.from, []);
    dests.get(m.from).push(m.to);
  }
  return dests;
}

function drawBoard() {
  const chess = new Chess(currentFen());
  const turn = chess.turn() === 'w' ? 'white' : 'black';
  const last = state.ply > 0 ? state.moves[state.ply - 1] : null;
  ground.set({
    fen: chess.fen(),
    orientation: state.orientation,
    turnColor: turn,
    check: chess.inCheck() ? turn : false,
    lastMove: last ? [last.from, last.to] : undefined,
    movable: { color: turn, dests: legalDests(chess) },
  });
  el.board.dataset.fen = ground.getFen();
}

function onBoardMove(orig, dest) {
  const chess = new Chess(currentFen());
  const options = chess.moves({ square: orig, verbose: true }).filter((m) => m.to === dest);
  if (options.length === 0) {
    drawBoard();
    return;
  }
  if (options.some((m) => m.promotion)) {
    askPromotion(chess.turn(), (role) => {
      if (role) play(orig + dest + role);
      else drawBoard();
    });
    return;
  }
  play(orig + dest);
}

function askPromotion(color, done) {
  const colour = color === 'w' ? 'white' : 'black';
  const roles = [['q', 'queen'], ['r', 'rook'], ['b', 'bishop'], ['n', 'knight']];
  el.promotion.innerHTML =
    '<div class="choices cg-wrap">' +
    roles
      .map(([r, name]) => `<button type="button" data-role="${r}" title="${name}"><piece class="${name} ${colour}"></piece></button>`)
      .join('') +
    '</div>';
  el.promotion.hidden = false;
  el.promotion.onclick = (e) => {
    const b = e.target.closest('button');
    el.promotion.hidden = true;
    el.promotion.onclick = null;
    done(b ? b.dataset.role : null);
  };
}

// ---------------------------------------------------------------- moves

function play(uci) {
  const next = state.moves[state.ply];
  if (next && next.uci === uci) {
    state.ply += 1;
  } else {
    const chess = new Chess(currentFen());
    const m = tryMove(chess, uci);
    if (!m) {
      drawBoard();
      return;
    }
    state.moves = state.moves.slice(0, state.ply);
    state.moves.push(m);
    state.ply += 1;
  }
  update();
}

function go(ply) {
  const p = Math.max(0, Math.min(state.moves.length, ply));
  if (p === state.ply) return;
  state.ply = p;
  update();
}

function update() {
  drawBoard();
  renderLine();
  el.fen.value = currentFen();
  el.back.disabled = el.first.disabled = state.ply === 0;
  el.forward.disabled = el.last.disabled = state.ply === state.moves.length;
  writeHash();
  explore();
}

// ---------------------------------------------------------------- line

function renderLine() {
  if (state.moves.length === 0) {
    el.line.innerHTML = '<span class="empty">Play a move on the board or click one in the table.</span>';
    return;
  }
  const parts = [];
  state.moves.forEach((m, i) => {
    if (m.color === 'w') parts.push(`<span class="num">${m.number}.</span>`);
    else if (i === 0) parts.push(`<span class="num">${m.number}…</span>`);
    const cls = i + 1 === state.ply ? ' current' : i + 1 > state.ply ? ' ahead' : '';
    parts.push(`<span class="mv${cls}" data-ply="${i + 1}" data-uci="${m.uci}">${esc(m.san)}</span>`);
  });
  el.line.innerHTML = parts.join(' ');
  const cur = el.line.querySelector('.mv.current');
  if (cur) {
    const top = cur.offsetTop - el.line.offsetTop;
    if (top < el.line.scrollTop || top + cur.offsetHeight > el.line.scrollTop + el.line.clientHeight) {
      el.line.scrollTop = top - 6;
    }
  } else {
    el.line.scrollTop = 0;
  }
}

// ---------------------------------------------------------------- URL hash

function writeHash() {
  const parts = [];
  if (state.start !== DEFAULT_POSITION) parts.push('fen=' + state.start.replace(/ /g, '_'));
  if (state.moves.length) parts.push('play=' + state.moves.map((m) => m.uci).join(','));
  if (state.ply !== state.moves.length) parts.push('at=' + state.ply);
  if (state.orientation === 'black') parts.push('o=black');
  const hash = parts.length ? '#' + parts.join('&') : '';
  if (location.hash !== hash) {
    history.replaceState(null, '', hash || location.pathname + location.search);
  }
}

function readHash() {
  const params = {};
  for (const kv of location.hash.replace(/^#/, '').split('&')) {
    const i = kv.indexOf('=');
    if (i > 0) params[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1));
  }
  let start = DEFAULT_POSITION;
  let error = null;
  if (params.fen) {
    try {
      start = new Chess(params.fen.replace(/_/g, ' ')).fen();
    } catch (e) {
      error = 'the link\'s FEN: ' + e.message;
    }
  }
  const ucis = params.play ? params.play.split(',').filter(Boolean) : [];
  const line = replay(start, ucis);
  state.start = start;
  state.moves = line.moves;
  const at = params.at === undefined ? line.moves.length : parseInt(params.at, 10);
  state.ply = Number.isFinite(at) ? Math.max(0, Math.min(line.moves.length, at)) : line.moves.length;
  state.orientation = params.o === 'black' ? 'black' : 'white';
  showPasteError(error || (line.error ? 'the link: ' + line.error : ''));
}

// ---------------------------------------------------------------- explorer data

const cache = new Map(); // query -> Promise of the answer
let requestSeq = 0;

function query(ply) {
  const play = state.moves.slice(0, ply).map((m) => m.uci).join(',');
  return `masters?fen=${encodeURIComponent(state.start)}&play=${play}&moves=${MOVES}&topGames=${TOP_GAMES}`;
}

function fetchExplorer(q) {
  let p = cache.get(q);
  if (!p) {
    p = fetch(q).then(async (r) => {
      if (!r.ok) {
        let msg = `${r.status} ${r.statusText}`;
        try {
          const body = await r.json();
          if (body && body.error) msg = body.error;
        } catch { /* not JSON */ }
        throw new Error(msg);
      }
      return r.json();
    });
    p.catch(() => cache.delete(q));
    cache.set(q, p);
    if (cache.size > 400) cache.delete(cache.keys().next().value);
  }
  return p;
}

async function explore() {
  const seq = ++requestSeq;
  const q = query(state.ply);
  el.body.dataset.ready = '0';
  const slow = setTimeout(() => {
    if (seq === requestSeq) {
      el.movesBox.classList.add('loading');
      setStatus('loading…');
    }
  }, 120);
  try {
    const data = await fetchExplorer(q);
    if (seq !== requestSeq) return;
    render(data);
    setStatus('');
    el.body.dataset.ready = '1';
  } catch (e) {
    if (seq !== requestSeq) return;
    setStatus('explorer: ' + e.message, true);
    el.body.dataset.ready = 'error';
  } finally {
    clearTimeout(slow);
    if (seq === requestSeq) el.movesBox.classList.remove('loading');
  }
}

function setStatus(text, error = false) {
  el.status.textContent = text;
  el.status.classList.toggle('error', error);
}

// ---------------------------------------------------------------- rendering

const esc = (s) =>
  String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const int = (n) => (n ?? 0).toLocaleString('en-US');
const sign = (x) => (x > 0 ? 'pos' : x < 0 ? 'neg' : '');

// A book value (-1..1, side to move) as text.
function fmtValue(v) {
  if (v === null || v === undefined) return '<span class="muted">–</span>';
  const t = (v > 0 ? '+' : v < 0 ? '−' : '±') + Math.abs(v).toFixed(3);
  return `<span class="${sign(v)}">${t}</span>`;
}

// A search score (centipawns; mate = ±(30000 − plies)) as pawns or #n.
function fmtScore(cp) {
  if (cp === null || cp === undefined) return '–';
  if (Math.abs(cp) >= 29000) {
    const moves = Math.ceil((30000 - Math.abs(cp)) / 2);
    return (cp > 0 ? '#' : '#−') + moves;
  }
  const p = cp / 100;
  return (p > 0 ? '+' : p < 0 ? '−' : '±') + Math.abs(p).toFixed(2);
}

// Who searched, as a tooltip: "Stockfish 15.1, nodes=50000, depth 14".
function searchedBy(a) {
  return a.engine ? `${a.engine}, ${a.budget}, depth ${a.depth}` : `depth ${a.depth}`;
}

function fmtAnalysis(a, withDepth) {
  if (!a) return '<span class="muted">–</span>';
  // The engine and budget in the tooltip: the header's cell is narrow.
  const d = withDepth ? ` <small title="${esc(searchedBy(a))}">d${a.depth}</small>` : '';
  return `<span class="${sign(a.score)}" title="${esc(searchedBy(a))}">${fmtScore(a.score)}</span>${d}`;
}

function fmtPct(p) {
  if (!p) return '<span class="muted">–</span>';
  const x = p * 100;
  return x >= 99.95 ? '100%' : x.toFixed(1) + '%';
}

function share(n, total) {
  if (!total) return '';
  const x = (100 * n) / total;
  if (x > 0 && x < 1) return '<1%';
  return Math.round(x) + '%';
}

function bar(w, d, b) {
  const total = w + d + b;
  if (!total) return '<div class="wdb"></div>';
  const seg = (cls, n) => {
    const x = (100 * n) / total;
    const label = x >= 13 ? Math.round(x) + '%' : '';
    return `<span class="${cls}" data-w="${x.toFixed(3)}">${label}</span>`;
  };
  const title = `White ${((100 * w) / total).toFixed(1)}% · Draw ${((100 * d) / total).toFixed(1)}% · Black ${((100 * b) / total).toFixed(1)}%`;
  return `<div class="wdb" title="${title}">${seg('w', w)}${seg('d', d)}${seg('b', b)}</div>`;
}

// The bars' widths, set through the CSSOM: the page's Content-Security-Policy
// (style-src 'self') refuses style attributes written in HTML.
function sizeBars(root) {
  for (const span of root.querySelectorAll('.wdb span[data-w]')) span.style.width = span.dataset.w + '%';
}

function gameTitle(g) {
  const r = g.winner === 'white' ? '1-0' : g.winner === 'black' ? '0-1' : '½-½';
  return `${g.white?.name ?? '?'} – ${g.black?.name ?? '?'} ${r}${g.year ? ', ' + g.year : ''}`;
}

function render(data) {
  const chess = new Chess(currentFen());
  const sanOf = (uci) => {
    const m = tryMove(new Chess(currentFen()), uci);
    return m ? m.san : uci;
  };
  const toMove = chess.turn() === 'w' ? 'White' : 'Black';

  // Opening name.
  const o = data.opening;
  el.opening.innerHTML = o
    ? `<span class="eco">${esc(o.eco)}</span><span class="name" title="${esc(o.eco + ' ' + o.name)}">${esc(o.name)}</span>`
    : `<span class="eco"></span><span class="name muted">${state.ply === 0 && state.start === DEFAULT_POSITION ? 'Starting position' : 'No opening name'}</span>`;

  // The position at a glance.
  const g = data.games || { white: data.white, draws: data.draws, black: data.black };
  const gTotal = g.white + g.draws + g.black;
  if (chess.isCheckmate()) el.sTurn.innerHTML = `${toMove} <small>mated</small>`;
  else if (chess.isStalemate()) el.sTurn.innerHTML = `${toMove} <small>stalemate</small>`;
  else if (chess.isDraw()) el.sTurn.innerHTML = `${toMove} <small>draw</small>`;
  else el.sTurn.textContent = toMove;
  el.sGames.textContent = int(gTotal);
  el.sGames.title = gTotal ? `White wins ${int(g.white)}, draws ${int(g.draws)}, Black wins ${int(g.black)}` : '';
  el.sValue.innerHTML = fmtValue(data.value);
  el.sValue.title = `the book's value for ${toMove} (−1 … +1)`;
  let choiceText;
  if (data.choice) {
    const cm = (data.moves || []).find((m) => m.uci === data.choice);
    const w = cm ? ` <small>${fmtPct(cm.weighted)}</small>` : '';
    choiceText = `<span class="star">★</span> ${esc(cm ? cm.san : sanOf(data.choice))}${w}`;
  } else if (data.moves && data.moves.length) {
    choiceText = '<span class="star">★</span> leaves the book';
  } else {
    choiceText = '<span class="muted">–</span>';
  }
  if (data.leaveWeight > 0) choiceText += ` <small>· leaves ${fmtPct(data.leaveWeight)}</small>`;
  el.sChoice.innerHTML = choiceText;
  el.sAnalysis.innerHTML = fmtAnalysis(data.analysis, true);
  const dev = data.deviation;
  el.sDeviation.innerHTML = dev
    ? `${esc(dev.san)} <span class="${sign(dev.score)}">${fmtScore(dev.score)}</span> <small title="${esc(searchedBy(dev))}">d${dev.depth}</small>`
    : '<span class="muted">–</span>';

  // The moves table.
  const moves = data.moves || [];
  const total = data.white + data.draws + data.black;
  const rows = moves.map((m) => {
    const n = m.white + m.draws + m.black;
    const title = m.game ? gameTitle(m.game) : m.opening ? `${m.opening.eco} ${m.opening.name}` : '';
    return (
      `<tr data-uci="${esc(m.uci)}"${m.choice ? ' class="choice"' : ''}${title ? ` title="${esc(title)}"` : ''}>` +
      `<td class="san">${esc(m.san)}${m.engine ? ' <span class="muted" title="an engine move added by grow: no game played it">~</span>' : ''}</td>` +
      `<td class="num">${int(n)}</td>` +
      `<td class="num">${share(n, total)}</td>` +
      `<td>${bar(m.white, m.draws, m.black)}</td>` +
      `<td class="num">${m.averageRating ? m.averageRating : '<span class="muted">–</span>'}</td>` +
      `<td class="num">${fmtValue(m.value)}</td>` +
      `<td class="num">${fmtValue(m.score)}</td>` +
      `<td class="num">${m.choice ? '<span class="star" title="the book\'s choice">★</span> ' : ''}${fmtPct(m.weighted)}</td>` +
      `<td class="num">${fmtAnalysis(m.analysis, false)}</td>` +
      '</tr>'
    );
  });
  if (dev && rows.length < MOVES + 1) {
    const leaveChoice = !data.choice && moves.length > 0;
    rows.push(
      `<tr class="leave${leaveChoice ? ' choice' : ''}" data-dev-uci="${esc(dev.uci)}" title="the best move outside the book, as the analysis found it">` +
        `<td class="san">${esc(dev.san)}</td>` +
        '<td class="num" colspan="3">outside the book</td>' +
        '<td></td><td></td>' +
        `<td class="num">${fmtValue(data.leaveScore)}</td>` +
        `<td class="num">${leaveChoice ? '<span class="star">★</span> ' : ''}${fmtPct(data.leaveWeight)}</td>` +
        `<td class="num">${fmtAnalysis(dev, false)}</td>` +
        '</tr>',
    );
  }
  if (rows.length === 0) {
    const why = data.inBook === false ? 'This position is not in the book.' : 'No book moves from this position.';
    rows.push(`<tr class="none"><td colspan="9">${why}</td></tr>`);
  }
  el.movesBody.innerHTML = rows.join('');
  el.movesFoot.innerHTML =
    '<tr><td>Σ</td>' +
    `<td class="num">${int(total)}</td>` +
    `<td class="num">${total ? '100%' : ''}</td>` +
    `<td>${bar(data.white, data.draws, data.black)}</td>` +
    '<td></td>' +
    `<td class="num">${fmtValue(data.value)}</td>` +
    '<td></td><td></td>' +
    `<td class="num">${fmtAnalysis(data.analysis, false)}</td></tr>`;
  sizeBars(el.movesBody);
  sizeBars(el.movesFoot);

  // The top games.
  const games = data.topGames || [];
  el.games.innerHTML = games.length
    ? games
        .map((t) => {
          const res = t.winner === 'white' ? ['r-w', '1-0'] : t.winner === 'black' ? ['r-b', '0-1'] : ['r-d', '½-½'];
          return (
            `<tr data-id="${esc(t.id)}" title="${esc(gameTitle(t))}: show the game">` +
            `<td class="rating">${t.white?.rating ?? ''}</td>` +
            `<td class="name">${esc(t.white?.name ?? '?')}</td>` +
            `<td class="result"><span class="${res[0]}">${res[1]}</span></td>` +
            `<td class="name">${esc(t.black?.name ?? '?')}</td>` +
            `<td class="rating">${t.black?.rating ?? ''}</td>` +
            `<td class="year">${t.year ?? ''}</td>` +
            `<td class="move">${esc(sanOf(t.uci))}</td>` +
            '</tr>'
          );
        })
        .join('')
    : '<tr class="none"><td colspan="7">No games</td></tr>';

  drawArrows(data);
}

// The book's choice as a quiet arrow; a hovered row's move in blue.
let shownData = null;
let hoverUci = null;
function drawArrows(data) {
  if (data) shownData = data;
  const shapes = [];
  const arrow = (uci, brush) => uci && shapes.push({ orig: uci.slice(0, 2), dest: uci.slice(2, 4), brush });
  if (hoverUci) arrow(hoverUci, 'paleBlue');
  else if (shownData && shownData.choice) arrow(shownData.choice, 'paleGreen');
  ground.setAutoShapes(shapes);
}

// ---------------------------------------------------------------- paste

function showPasteError(text) {
  el.pasteError.textContent = text || '';
  el.pasteError.title = text || '';
}

const FEN_LIKE = /^\s*[pnbrqkPNBRQK1-8]+(\/[pnbrqkPNBRQK1-8]+){7}(\s|$)/;

// Loads a FEN or a PGN; returns an error text, or '' when loaded.
function loadText(text) {
  const t = text.trim();
  if (!t) return 'Paste a FEN or a PGN first.';
  if (FEN_LIKE.test(t)) {
    let fen = t.split(/\s+/);
    if (fen.length === 1) fen.push('w');
    try {
      const chess = new Chess(fen.join(' '));
      state.start = chess.fen();
    } catch (e) {
      return 'FEN: ' + e.message.replace(/^Invalid FEN: /, '');
    }
    state.moves = [];
    state.ply = 0;
    update();
    return '';
  }
  const chess = new Chess();
  try {
    chess.loadPgn(t);
  } catch (e) {
    return 'PGN: ' + e.message;
  }
  const headers = chess.getHeaders ? chess.getHeaders() : chess.header();
  const start = headers.FEN ? new Chess(headers.FEN).fen() : DEFAULT_POSITION;
  const history = chess.history({ verbose: true });
  if (history.length === 0 && !headers.FEN) return 'PGN: no moves found.';
  const line = replay(start, history.map((m) => m.lan));
  if (line.error) return 'PGN: ' + line.error;
  state.start = start;
  state.moves = line.moves;
  state.ply = line.moves.length;
  update();
  return '';
}

function pasteGo() {
  const err = loadText(el.paste.value);
  showPasteError(err);
}

// ---------------------------------------------------------------- PGN panel

let panelPgn = '';
async function openGame(id, title) {
  panelPgn = '';
  el.pgnTitle.textContent = title;
  el.pgnText.textContent = 'loading…';
  el.pgnOpen.href = `masters/pgn/${encodeURIComponent(id)}`;
  el.pgnLoad.disabled = true;
  if (!el.pgnPanel.open) el.pgnPanel.showModal();
  try {
    const r = await fetch(`masters/pgn/${encodeURIComponent(id)}`);
    if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
    panelPgn = await r.text();
    el.pgnText.textContent = panelPgn;
    el.pgnLoad.disabled = false;
  } catch (e) {
    el.pgnText.textContent = 'Could not load the game: ' + e.message;
  }
}

// ---------------------------------------------------------------- events

el.movesBody.addEventListener('click', (e) => {
  const tr = e.target.closest('tr');
  if (!tr) return;
  const uci = tr.dataset.uci || tr.dataset.devUci;
  if (uci) {
    hoverUci = null;
    play(uci);
  }
});
el.movesBody.addEventListener('mouseover', (e) => {
  const tr = e.target.closest('tr');
  const uci = tr ? tr.dataset.uci || tr.dataset.devUci || null : null;
  if (uci !== hoverUci) {
    hoverUci = uci;
    drawArrows();
    // Warm the cache for the likely next click.
    if (uci) {
      const chess = new Chess(currentFen());
      if (tryMove(chess, uci)) {
        const play = state.moves.slice(0, state.ply).map((m) => m.uci).concat(uci).join(',');
        fetchExplorer(`masters?fen=${encodeURIComponent(state.start)}&play=${play}&moves=${MOVES}&topGames=${TOP_GAMES}`).catch(() => {});
      }
    }
  }
});
el.movesBody.addEventListener('mouseleave', () => {
  hoverUci = null;
  drawArrows();
});

el.line.addEventListener('click', (e) => {
  const mv = e.target.closest('.mv');
  if (mv) go(parseInt(mv.dataset.ply, 10));
});

el.games.addEventListener('click', (e) => {
  const tr = e.target.closest('tr[data-id]');
  if (tr) openGame(tr.dataset.id, tr.title.replace(/: show the game$/, ''));
});

el.first.addEventListener('click', () => go(0));
el.back.addEventListener('click', () => go(state.ply - 1));
el.forward.addEventListener('click', () => go(state.ply + 1));
el.last.addEventListener('click', () => go(state.moves.length));
el.reset.addEventListener('click', () => {
  state.start = DEFAULT_POSITION;
  state.moves = [];
  state.ply = 0;
  showPasteError('');
  update();
});
el.flip.addEventListener('click', flip);

function flip() {
  state.orientation = state.orientation === 'white' ? 'black' : 'white';
  ground.set({ orientation: state.orientation });
  writeHash();
}

el.pasteGo.addEventListener('click', pasteGo);
el.paste.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    pasteGo();
  }
});
el.paste.addEventListener('input', () => showPasteError(''));
el.fen.addEventListener('focus', () => el.fen.select());

el.pgnClose.addEventListener('click', () => el.pgnPanel.close());
el.pgnPanel.addEventListener('click', (e) => {
  if (e.target === el.pgnPanel) el.pgnPanel.close(); // the backdrop
});
el.pgnLoad.addEventListener('click', () => {
  if (!panelPgn) return;
  const err = loadText(panelPgn);
  showPasteError(err);
  el.pgnPanel.close();
});

document.addEventListener('keydown', (e) => {
  if (e.target.closest && e.target.closest('input, textarea, dialog')) return;
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const keys = {
    ArrowLeft: () => go(state.ply - 1),
    ArrowRight: () => go(state.ply + 1),
    ArrowUp: () => go(0),
    Home: () => go(0),
    ArrowDown: () => go(state.moves.length),
    End: () => go(state.moves.length),
    f: flip,
  };
  const k = keys[e.key];
  if (k) {
    e.preventDefault();
    k();
  }
});

window.addEventListener('hashchange', () => {
  readHash();
  update();
});

readHash();
update();
