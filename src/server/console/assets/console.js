// The wharf console's page logic: plain JavaScript served by wharfd itself, no library.
// Every value from the server goes into the page as text (textContent), never as markup.
'use strict';

(function () {
  const state = { csrf: null, page: null, timer: null, tp: [], tpLast: null, next: null };
  const $ = (id) => document.getElementById(id);

  function fmtBytes(n) {
    if (n === null || n === undefined) return '';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0, v = Number(n);
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
  }
  function fmtTime(t) { return t ? new Date(t * 1000).toISOString().replace('.000Z', 'Z') : ''; }
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function numCell(v, text) {
    const td = el('td', text === undefined ? v : text, 'num');
    if (v !== null && v !== undefined) td.dataset.value = String(v);
    return td;
  }
  function clear(tb) { while (tb.firstChild) tb.removeChild(tb.firstChild); }

  async function api(path, opts) {
    const o = Object.assign({ credentials: 'same-origin', headers: {} }, opts || {});
    if (state.csrf) o.headers['X-Wharf-Csrf'] = state.csrf;
    const r = await fetch('/console/api/' + path, o);
    if (r.status === 401) { showLogin(); throw new Error('not logged in'); }
    return r;
  }
  async function apiJson(path) {
    const r = await api(path);
    const j = await r.json();
    if (!r.ok) throw new Error((j.error || r.status) + ': ' + (j.message || ''));
    return j;
  }

  // ---- login -------------------------------------------------------------------------------
  function showLogin() {
    state.csrf = null;
    stopTimer();
    $('nav').hidden = true; $('who').hidden = true;
    document.querySelectorAll('.page').forEach((p) => { p.hidden = true; });
    $('login-page').hidden = false;
  }
  function showApp(s) {
    state.csrf = s.csrf;
    $('login-page').hidden = true;
    $('nav').hidden = false; $('who').hidden = false;
    $('who-name').textContent = s.root ? 'root' : s.user;
    route();
  }
  async function login(ev) {
    ev.preventDefault();
    const ak = $('login-ak'), sk = $('login-sk');
    const body = JSON.stringify({ access_key: ak.value, secret_key: sk.value });
    sk.value = '';
    $('login-error').textContent = '';
    const r = await fetch('/console/api/login', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' }, body: body,
    });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) { $('login-error').textContent = j.message || ('login failed: ' + r.status); return; }
    showApp(j);
  }
  async function logout() {
    try { await api('logout', { method: 'POST' }); } catch (e) { /* shown as the login page */ }
    showLogin();
  }

  // ---- pages -------------------------------------------------------------------------------
  function stopTimer() { if (state.timer) clearInterval(state.timer); state.timer = null; }
  function every(ms, fn) {
    stopTimer();
    const run = () => fn().catch((e) => { if (state.csrf) console.warn(e); });
    run();
    state.timer = setInterval(run, ms);
  }
  function route() {
    if (!state.csrf) return;
    const page = (location.hash || '#cluster').slice(1).split('/')[0];
    const known = ['cluster', 'buckets', 'objects', 'throughput', 'errors'];
    const p = known.includes(page) ? page : 'cluster';
    state.page = p;
    document.querySelectorAll('.page').forEach((s) => { s.hidden = s.id !== 'page-' + p; });
    document.querySelectorAll('nav a').forEach((a) => a.classList.toggle('active', a.dataset.page === p));
    stopTimer();
    if (p === 'cluster') every(1000, loadCluster);
    else if (p === 'buckets') loadBuckets().catch(showErr('buckets-summary'));
    else if (p === 'objects') openObjects().catch(showErr('objects-path'));
    else if (p === 'throughput') { state.tp = []; state.tpLast = null; every(1000, sampleThroughput); }
    else if (p === 'errors') every(2000, loadErrors);
  }
  function showErr(id) { return (e) => { $(id).textContent = String(e.message || e); }; }

  async function loadCluster() {
    const j = await apiJson('cluster');
    const st = j.status, tb = $('cluster-table').tBodies[0];
    clear(tb);
    for (const n of st.nodes) {
      const tr = el('tr');
      tr.dataset.addr = n.addr; tr.dataset.state = n.state; tr.dataset.id = n.id;
      tr.append(numCell(n.id), el('td', n.addr, 'addr'), el('td', n.zone || '-', 'zone'),
        el('td', n.state, 'state'), numCell(n.capacity, fmtBytes(n.capacity)),
        numCell(n.free, fmtBytes(n.free)), numCell(n.copies === undefined ? null : n.copies, n.copies === undefined ? '-' : n.copies),
        el('td', n.heartbeat_age_s === undefined ? '-' : n.heartbeat_age_s + ' s ago'),
        el('td', n.scrub_progress === undefined ? '-' : (100 * n.scrub_progress).toFixed(0) + '%'),
        numCell(n.damaged === undefined ? null : n.damaged, n.damaged === undefined ? '-' : n.damaged));
      tb.append(tr);
    }
    const s = st.servers || {};
    const up = s.up || 0, total = s.total || st.nodes.length;
    let text = (j.mode === 'single' ? 'single server (wharfd serve): ' : '') + total + ' storage server' +
      (total === 1 ? '' : 's') + ', ' + up + ' up' + (total - up ? ', ' + (total - up) + ' not up' : '');
    if (st.leader) text += '; maintenance leader ' + st.leader.addr + (st.leader.live ? '' : ' (not live)');
    else if (j.mode === 'cluster') text += '; no maintenance leader yet';
    $('cluster-summary').textContent = text;
    $('cluster-summary').dataset.up = up; $('cluster-summary').dataset.total = total;
    $('cluster-summary').dataset.leader = st.leader ? st.leader.addr : '';
    const bt = $('backlog-table').tBodies[0];
    clear(bt);
    if (st.backlog) {
      for (const k of Object.keys(st.backlog)) {
        const tr = el('tr'); tr.dataset.key = k;
        tr.append(el('th', k.replace(/_/g, ' ')), numCell(st.backlog[k]));
        bt.append(tr);
      }
    } else {
      const tr = el('tr'); tr.append(el('td', 'a single server has no repair, drain or scrub backlog')); bt.append(tr);
    }
    $('cluster-updated').textContent = 'updated ' + new Date().toISOString();
  }

  async function loadBuckets() {
    const j = await apiJson('buckets');
    const tb = $('buckets-table').tBodies[0];
    clear(tb);
    for (const b of j.buckets) {
      const tr = el('tr'); tr.dataset.bucket = b.name;
      const a = el('a', b.name, 'link'); a.href = '#objects/' + encodeURIComponent(b.name);
      const name = el('td'); name.append(a);
      if (b.unavailable) {
        tr.append(name, el('td', 'cannot be counted now'), el('td', ''), el('td', fmtTime(b.created)));
      } else {
        tr.append(name, numCell(b.objects, (b.more ? '≥ ' : '') + b.objects),
          numCell(b.bytes, fmtBytes(b.bytes)), el('td', fmtTime(b.created)));
      }
      tb.append(tr);
    }
    $('buckets-summary').textContent = j.buckets.length + ' buckets, ' + j.objects + ' objects, ' + fmtBytes(j.bytes);
    return j;
  }

  async function openObjects() {
    const parts = location.hash.split('/');
    const want = parts.length > 1 ? decodeURIComponent(parts[1]) : null;
    const j = await apiJson('buckets');
    const sel = $('objects-bucket');
    const cur = want || sel.value;
    clear(sel);
    for (const b of j.buckets) { const o = el('option', b.name); o.value = b.name; sel.append(o); }
    if (cur && j.buckets.some((b) => b.name === cur)) sel.value = cur;
    if (sel.value) await listObjects(false);
  }
  async function listObjects(more) {
    const q = new URLSearchParams({ bucket: $('objects-bucket').value, prefix: $('objects-prefix').value,
      delimiter: $('objects-delimiter').value });
    if (more && state.next) q.set('start-after', state.next);
    const j = await apiJson('objects?' + q.toString());
    const tb = $('objects-table').tBodies[0];
    if (!more) { clear(tb); $('object-detail').hidden = true; }
    $('objects-path').textContent = j.bucket + '/' + j.prefix;
    if (!more && j.prefix) {
      const tr = el('tr'); const td = el('td'); const a = el('button', '..', 'link');
      a.type = 'button';
      a.addEventListener('click', () => { $('objects-prefix').value = parentPrefix(j.prefix); listObjects(false); });
      td.append(a); tr.append(td, el('td'), el('td'), el('td')); tb.append(tr);
    }
    for (const p of j.prefixes) {
      const tr = el('tr'); tr.dataset.prefix = p;
      const td = el('td'); const a = el('button', p, 'link'); a.type = 'button';
      a.addEventListener('click', () => { $('objects-prefix').value = p; listObjects(false); });
      td.append(a); tr.append(td, el('td', 'prefix'), el('td'), el('td')); tb.append(tr);
    }
    for (const o of j.objects) {
      const tr = el('tr'); tr.dataset.key = o.key;
      const td = el('td'); const a = el('button', o.key, 'link'); a.type = 'button';
      a.addEventListener('click', () => headObject(j.bucket, o.key).catch(showErr('object-note')));
      td.append(a);
      tr.append(td, numCell(o.size, fmtBytes(o.size)), el('td', fmtTime(o.mtime)), el('td', o.etag));
      tb.append(tr);
    }
    state.next = j.truncated ? j.next : null;
    $('objects-more').hidden = !j.truncated;
  }
  function parentPrefix(p) {
    const d = $('objects-delimiter').value || '/';
    const s = p.endsWith(d) ? p.slice(0, -d.length) : p;
    const i = s.lastIndexOf(d);
    return i < 0 ? '' : s.slice(0, i + d.length);
  }
  async function headObject(bucket, key) {
    const q = new URLSearchParams({ bucket: bucket, key: key });
    const j = await apiJson('head?' + q.toString());
    $('object-detail').hidden = false;
    $('object-title').textContent = bucket + '/' + key;
    const tb = $('object-head').tBodies[0];
    clear(tb);
    const rows = [['size', j.size + ' bytes (' + fmtBytes(j.size) + ')'], ['etag', j.etag],
      ['modified', fmtTime(j.mtime)], ['content type', j.content_type], ['version', j.version_id],
      ['parts', j.parts], ['crc64nvme', j.crc64nvme], ['encrypted', j.encrypted ? 'yes' : 'no'],
      ['tags', j.tags || ''], ['metadata', JSON.stringify(j.metadata)]];
    for (const [k, v] of rows) { const tr = el('tr'); tr.dataset.field = k; tr.append(el('th', k), el('td', v)); tb.append(tr); }
    const btn = $('object-download');
    btn.disabled = !j.downloadable;
    $('object-note').textContent = j.downloadable ? '' : 'too large or encrypted for the console: use an S3 client';
    btn.onclick = () => download(bucket, key).catch(showErr('object-note'));
  }
  async function download(bucket, key) {
    const q = new URLSearchParams({ bucket: bucket, key: key });
    const r = await api('download?' + q.toString());
    if (!r.ok) { const j = await r.json().catch(() => ({})); throw new Error(j.message || r.status); }
    const blob = await r.blob();
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = key.split('/').pop() || 'object';
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    $('object-note').textContent = 'downloaded ' + blob.size + ' bytes';
  }

  // ---- throughput: the /metrics counters, sampled each second -------------------------------
  function parseMetrics(text) {
    // RDMA: the server's own engine, and on a gateway what its storage servers moved for it.
    const want = ['wharf_http_read_bytes_total', 'wharf_http_write_bytes_total',
      'wharf_rdma_read_bytes_total', 'wharf_rdma_write_bytes_total',
      'wharf_rdma_delegated_read_bytes_total', 'wharf_rdma_delegated_write_bytes_total'];
    const m = {};
    for (const line of text.split('\n')) {
      if (!line || line[0] === '#') continue;
      const sp = line.lastIndexOf(' ');
      let name = line.slice(0, sp);
      const br = name.indexOf('{');
      if (br >= 0) name = name.slice(0, br);
      if (want.includes(name)) m[name] = (m[name] || 0) + Number(line.slice(sp + 1));
    }
    for (const w of want) if (m[w] === undefined) m[w] = 0;
    m.rdma_read = m.wharf_rdma_read_bytes_total + m.wharf_rdma_delegated_read_bytes_total;
    m.rdma_write = m.wharf_rdma_write_bytes_total + m.wharf_rdma_delegated_write_bytes_total;
    return m;
  }
  async function sampleThroughput() {
    const r = await api('metrics');
    if (!r.ok) throw new Error('metrics: ' + r.status);
    const m = parseMetrics(await r.text());
    const t = performance.now() / 1000;
    const http = m.wharf_http_read_bytes_total + m.wharf_http_write_bytes_total;
    const rdma = m.rdma_read + m.rdma_write;
    if (state.tpLast) {
      const dt = Math.max(t - state.tpLast.t, 0.001);
      state.tp.push({ http: Math.max(0, http - state.tpLast.http) / dt, rdma: Math.max(0, rdma - state.tpLast.rdma) / dt });
      if (state.tp.length > 120) state.tp.shift();
    }
    state.tpLast = { t: t, http: http, rdma: rdma };
    const last = state.tp[state.tp.length - 1] || { http: 0, rdma: 0 };
    for (const [k, rd, wr] of [['http', 'wharf_http_read_bytes_total', 'wharf_http_write_bytes_total'],
      ['rdma', 'rdma_read', 'rdma_write']]) {
      const tr = document.querySelector('#tp-table tr[data-transport="' + k + '"]');
      tr.querySelector('.rate').textContent = fmtBytes(Math.round(last[k])) + '/s';
      tr.querySelector('.read').textContent = fmtBytes(m[rd]);
      tr.querySelector('.read').dataset.value = String(m[rd]);
      tr.querySelector('.write').textContent = fmtBytes(m[wr]);
      tr.querySelector('.write').dataset.value = String(m[wr]);
    }
    $('tp-graph').dataset.samples = String(state.tp.length);
    drawGraph();
  }
  function drawGraph() {
    const c = $('tp-graph'), g = c.getContext('2d');
    const W = c.width, H = c.height, L = 70, B = 20;
    g.clearRect(0, 0, W, H);
    const max = Math.max(1024, ...state.tp.map((s) => Math.max(s.http, s.rdma)));
    g.strokeStyle = '#d5dde6'; g.fillStyle = '#5f6b78'; g.font = '11px sans-serif';
    for (let i = 0; i <= 4; i++) {
      const y = (H - B) * (1 - i / 4) + 0.5;
      g.beginPath(); g.moveTo(L, y); g.lineTo(W, y); g.stroke();
      g.fillText(fmtBytes(Math.round(max * i / 4)) + '/s', 2, Math.max(10, y - 2));
    }
    g.fillText('last ' + state.tp.length + ' s', W - 70, H - 5);
    const line = (key, color) => {
      g.strokeStyle = color; g.lineWidth = 2; g.beginPath();
      state.tp.forEach((s, i) => {
        const x = L + (W - L) * (i / 119), y = (H - B) * (1 - s[key] / max);
        if (i) g.lineTo(x, y); else g.moveTo(x, y);
      });
      g.stroke(); g.lineWidth = 1;
    };
    line('http', '#1a73e8');
    line('rdma', '#e8710a');
  }

  // ---- recent errors -----------------------------------------------------------------------
  async function loadErrors() {
    const j = await apiJson('errors');
    const tb = $('errors-table').tBodies[0];
    clear(tb);
    for (const e of j.errors) {
      const tr = el('tr'); tr.dataset.seq = e.seq; tr.dataset.status = e.status;
      tr.append(el('td', fmtTime(e.time)), numCell(e.status), el('td', e.code, 'code'), el('td', e.api),
        el('td', e.method), el('td', e.path, 'path'), el('td', e.message), el('td', e.peer), el('td', e.id));
      tb.append(tr);
    }
    $('errors-summary').textContent = j.total + ' error replies since the server started; the last ' +
      Math.min(j.total, j.kept) + ' shown (at most ' + j.kept + ' kept)';
  }

  // ---- start -------------------------------------------------------------------------------
  document.addEventListener('DOMContentLoaded', async () => {
    $('login-form').addEventListener('submit', (e) => { login(e).catch((x) => { $('login-error').textContent = String(x); }); });
    $('logout').addEventListener('click', logout);
    $('objects-form').addEventListener('submit', (e) => { e.preventDefault(); listObjects(false).catch(showErr('objects-path')); });
    $('objects-more').addEventListener('click', () => listObjects(true).catch(showErr('objects-path')));
    window.addEventListener('hashchange', route);
    try {
      const r = await fetch('/console/api/session', { credentials: 'same-origin' });
      if (r.ok) showApp(await r.json()); else showLogin();
    } catch (e) { showLogin(); }
  });
})();
