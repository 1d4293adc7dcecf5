/* cadmotion viewer: a self-contained WebGL (or 2-D canvas) player for one motion.
   Data: the JSON block with id "cadmotion-data", see html.py.
   Status for tests and tools, on the html element: data-status ("ok" | "error"), data-frame (keyframe
   index shown), data-frames-seen (distinct keyframes drawn), data-renderer ("webgl" | "2d"),
   data-markers (contact markers drawn; pages with contacts only), data-error (message). The assembly frame is Z-up and so is the camera. */
(function () {
  'use strict';
  var root = document.documentElement;
  function fail(msg) {
    root.setAttribute('data-status', 'error');
    root.setAttribute('data-error', String(msg));
    var box = document.getElementById('cm-error');
    if (box) { box.textContent = 'Viewer error: ' + msg; box.style.display = 'block'; }
  }
  window.onerror = function (msg, src, line) { fail(msg + ' (line ' + line + ')'); };

  function decode(s, Type) {
    var bin = atob(s), n = bin.length, u8 = new Uint8Array(n);
    for (var i = 0; i < n; i++) u8[i] = bin.charCodeAt(i);
    return new Type(u8.buffer);
  }

  var D = JSON.parse(document.getElementById('cadmotion-data').textContent);
  var T = D.time, nt = T.length, nb = D.parts.length;
  var POS = decode(D.pos, Float32Array), QUAT = decode(D.quat, Float32Array);
  /* contact markers: shown only at the keyframes where their contact is active */
  var SHOWN = D.shown ? decode(D.shown, Uint8Array) : null;
  function shown(b, k, s) {
    var kk = s >= 0.5 && nt > 1 ? Math.min(k + 1, nt - 1) : k;  /* the keyframe on screen (data-frame) */
    return !SHOWN || SHOWN[kk * nb + b] > 0;
  }

  /* meshes, de-indexed with one normal per triangle (flat shading) */
  var MESHES = D.meshes.map(function (m) {
    var p = decode(m.p, Float32Array), idx = decode(m.i, Uint32Array);
    var ntri = idx.length / 3, tri = new Float32Array(ntri * 9), nrm = new Float32Array(ntri * 9);
    for (var t = 0; t < ntri; t++) {
      var a = idx[3 * t] * 3, b = idx[3 * t + 1] * 3, c = idx[3 * t + 2] * 3;
      var ux = p[b] - p[a], uy = p[b + 1] - p[a + 1], uz = p[b + 2] - p[a + 2];
      var vx = p[c] - p[a], vy = p[c + 1] - p[a + 1], vz = p[c + 2] - p[a + 2];
      var nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
      var l = Math.sqrt(nx * nx + ny * ny + nz * nz) || 1;
      nx /= l; ny /= l; nz /= l;
      var v = [a, b, c];
      for (var k = 0; k < 3; k++) {
        var o = 9 * t + 3 * k;
        tri[o] = p[v[k]]; tri[o + 1] = p[v[k] + 1]; tri[o + 2] = p[v[k] + 2];
        nrm[o] = nx; nrm[o + 1] = ny; nrm[o + 2] = nz;
      }
    }
    return { tri: tri, nrm: nrm, count: ntri * 3 };
  });

  /* ---- small column-major 4x4 matrix helpers ---- */
  function mul(a, b) {
    var r = new Float32Array(16);
    for (var c = 0; c < 4; c++) for (var i = 0; i < 4; i++) {
      r[4 * c + i] = a[i] * b[4 * c] + a[4 + i] * b[4 * c + 1] + a[8 + i] * b[4 * c + 2] + a[12 + i] * b[4 * c + 3];
    }
    return r;
  }
  function perspective(fovy, aspect, near, far) {
    var f = 1 / Math.tan(fovy / 2), r = new Float32Array(16);
    r[0] = f / aspect; r[5] = f; r[10] = (far + near) / (near - far); r[11] = -1;
    r[14] = 2 * far * near / (near - far);
    return r;
  }
  function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function norm(a) { var l = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0] / l, a[1] / l, a[2] / l]; }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function lookAt(eye, target, up) {
    var z = norm(sub(eye, target)), x = norm(cross(up, z)), y = cross(z, x);
    return new Float32Array([x[0], y[0], z[0], 0, x[1], y[1], z[1], 0, x[2], y[2], z[2], 0,
      -dot(x, eye), -dot(y, eye), -dot(z, eye), 1]);
  }

  /* ---- keyframe interpolation: positions linear, orientations normalised lerp ---- */
  function bracket(t) {
    if (nt < 2 || t <= T[0]) return [0, 0];
    if (t >= T[nt - 1]) return [nt - 2, 1];
    var lo = 0, hi = nt - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (T[mid] <= t) lo = mid; else hi = mid; }
    var h = T[lo + 1] - T[lo];
    return [lo, h > 0 ? (t - T[lo]) / h : 0];
  }
  function partMatrix(b, k, s) {
    var k1 = Math.min(k + 1, nt - 1), i0 = (k * nb + b), i1 = (k1 * nb + b);
    var px = POS[3 * i0] + s * (POS[3 * i1] - POS[3 * i0]);
    var py = POS[3 * i0 + 1] + s * (POS[3 * i1 + 1] - POS[3 * i0 + 1]);
    var pz = POS[3 * i0 + 2] + s * (POS[3 * i1 + 2] - POS[3 * i0 + 2]);
    var q0 = [QUAT[4 * i0], QUAT[4 * i0 + 1], QUAT[4 * i0 + 2], QUAT[4 * i0 + 3]];
    var q1 = [QUAT[4 * i1], QUAT[4 * i1 + 1], QUAT[4 * i1 + 2], QUAT[4 * i1 + 3]];
    var sg = (q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3]) < 0 ? -1 : 1;
    var w = q0[0] + s * (sg * q1[0] - q0[0]), x = q0[1] + s * (sg * q1[1] - q0[1]);
    var y = q0[2] + s * (sg * q1[2] - q0[2]), z = q0[3] + s * (sg * q1[3] - q0[3]);
    var l = Math.sqrt(w * w + x * x + y * y + z * z) || 1;
    w /= l; x /= l; y /= l; z /= l;
    return new Float32Array([
      1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y), 0,
      2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x), 0,
      2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y), 0,
      px, py, pz, 1]);
  }

  /* ---- camera: orbit about the scene centre, Z up ---- */
  /* the initial view comes from the page's data (the video writer uses the same one) */
  var V = D.view || { az: -0.95, el: 0.45, fov: 45 * Math.PI / 180, dist: 0.85 };
  var FOV = V.fov;
  var cam = { az: V.az, el: V.el, dist: 1, target: D.center.slice() };
  function resetView() {
    cam.az = V.az; cam.el = V.el; cam.target = D.center.slice();
    cam.dist = D.radius / Math.sin(FOV / 2) * V.dist;
  }
  resetView();
  function cameraMatrices(aspect) {
    var ce = Math.cos(cam.el), back = [ce * Math.cos(cam.az), ce * Math.sin(cam.az), Math.sin(cam.el)];
    var eye = [cam.target[0] + cam.dist * back[0], cam.target[1] + cam.dist * back[1], cam.target[2] + cam.dist * back[2]];
    var view = lookAt(eye, cam.target, [0, 0, 1]);
    var near = Math.max(cam.dist - 2.5 * D.radius, cam.dist * 0.01), far = cam.dist + 2.5 * D.radius;
    var right = norm(cross([0, 0, 1], back)), up = cross(back, right);
    var light = norm([back[0] + 0.5 * up[0] - 0.4 * right[0], back[1] + 0.5 * up[1] - 0.4 * right[1],
      back[2] + 0.5 * up[2] - 0.4 * right[2]]);
    return { vp: mul(perspective(FOV, aspect, near, far), view), light: light };
  }

  /* ---- renderers ---- */
  var canvas = document.getElementById('cm-canvas');
  function fitCanvas(cv) {
    var dpr = window.devicePixelRatio || 1, w = Math.max(1, Math.round(cv.clientWidth * dpr)),
      h = Math.max(1, Math.round(cv.clientHeight * dpr));
    if (cv.width !== w || cv.height !== h) { cv.width = w; cv.height = h; }
  }
  var ORDER = D.parts.map(function (p, i) { return i; }).sort(function (a, b) {
    return (D.parts[a].color[3] < 1) - (D.parts[b].color[3] < 1);
  });

  function makeWebGL(cv) {
    var gl = cv.getContext('webgl', { antialias: true }) || cv.getContext('experimental-webgl');
    if (!gl) return null;
    function shader(type, src) {
      var s = gl.createShader(type); gl.shaderSource(s, src); gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
      return s;
    }
    var prog = gl.createProgram();
    gl.attachShader(prog, shader(gl.VERTEX_SHADER,
      'attribute vec3 aPos; attribute vec3 aNrm; uniform mat4 uVP; uniform mat4 uM; varying vec3 vN;' +
      'void main(){ vN = (uM * vec4(aNrm, 0.0)).xyz; gl_Position = uVP * uM * vec4(aPos, 1.0); }'));
    gl.attachShader(prog, shader(gl.FRAGMENT_SHADER,
      'precision mediump float; uniform vec4 uColor; uniform vec3 uLight; varying vec3 vN;' +
      'void main(){ float d = abs(dot(normalize(vN), uLight));' +
      ' gl_FragColor = vec4(uColor.rgb * (0.35 + 0.65 * d), uColor.a); }'));
    gl.linkProgram(prog);
    if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(prog));
    var loc = {
      pos: gl.getAttribLocation(prog, 'aPos'), nrm: gl.getAttribLocation(prog, 'aNrm'),
      vp: gl.getUniformLocation(prog, 'uVP'), m: gl.getUniformLocation(prog, 'uM'),
      color: gl.getUniformLocation(prog, 'uColor'), light: gl.getUniformLocation(prog, 'uLight')
    };
    var buffers = MESHES.map(function (m) {
      var bp = gl.createBuffer(); gl.bindBuffer(gl.ARRAY_BUFFER, bp); gl.bufferData(gl.ARRAY_BUFFER, m.tri, gl.STATIC_DRAW);
      var bn = gl.createBuffer(); gl.bindBuffer(gl.ARRAY_BUFFER, bn); gl.bufferData(gl.ARRAY_BUFFER, m.nrm, gl.STATIC_DRAW);
      return { p: bp, n: bn, count: m.count };
    });
    gl.enable(gl.DEPTH_TEST);
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
    return function draw(k, s) {
      fitCanvas(cv);
      gl.viewport(0, 0, cv.width, cv.height);
      gl.clearColor(0.93, 0.94, 0.96, 1); gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
      gl.useProgram(prog);
      var c = cameraMatrices(cv.width / cv.height);
      gl.uniformMatrix4fv(loc.vp, false, c.vp); gl.uniform3fv(loc.light, c.light);
      gl.enableVertexAttribArray(loc.pos); gl.enableVertexAttribArray(loc.nrm);
      ORDER.forEach(function (b) {
        if (!shown(b, k, s)) return;
        var part = D.parts[b], buf = buffers[part.mesh], col = part.color;
        var transparent = col[3] < 1;
        if (transparent) { gl.enable(gl.BLEND); gl.depthMask(false); } else { gl.disable(gl.BLEND); gl.depthMask(true); }
        gl.uniformMatrix4fv(loc.m, false, partMatrix(b, k, s));
        gl.uniform4f(loc.color, col[0], col[1], col[2], col[3]);
        gl.bindBuffer(gl.ARRAY_BUFFER, buf.p); gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
        gl.bindBuffer(gl.ARRAY_BUFFER, buf.n); gl.vertexAttribPointer(loc.nrm, 3, gl.FLOAT, false, 0, 0);
        gl.drawArrays(gl.TRIANGLES, 0, buf.count);
      });
      gl.depthMask(true);
    };
  }

  function make2D(cv) {
    var ctx = cv.getContext('2d');
    if (!ctx) return null;
    var total = 0;
    D.parts.forEach(function (p) { total += MESHES[p.mesh].count / 3; });
    var sx = new Float32Array(total * 3), sy = new Float32Array(total * 3), depth = new Float32Array(total),
      shade = new Float32Array(total), owner = new Int32Array(total), order = new Uint32Array(total);
    return function draw(k, s) {
      fitCanvas(cv);
      var W = cv.width, H = cv.height, c = cameraMatrices(W / H), vp = c.vp, L = c.light, n = 0;
      ctx.fillStyle = 'rgb(237,240,245)'; ctx.fillRect(0, 0, W, H);
      for (var b = 0; b < nb; b++) {
        if (!shown(b, k, s)) continue;
        var m = MESHES[D.parts[b].mesh], M = partMatrix(b, k, s), A = mul(vp, M), tri = m.tri, nrm = m.nrm;
        for (var t = 0; t < m.count / 3; t++) {
          var ok = true, zsum = 0;
          for (var v = 0; v < 3; v++) {
            var o = 9 * t + 3 * v, x = tri[o], y = tri[o + 1], z = tri[o + 2];
            var cw = A[3] * x + A[7] * y + A[11] * z + A[15];
            if (cw <= 1e-9) { ok = false; break; }
            sx[3 * n + v] = ((A[0] * x + A[4] * y + A[8] * z + A[12]) / cw * 0.5 + 0.5) * W;
            sy[3 * n + v] = (0.5 - (A[1] * x + A[5] * y + A[9] * z + A[13]) / cw * 0.5) * H;
            zsum += (A[2] * x + A[6] * y + A[10] * z + A[14]) / cw;
          }
          if (!ok) continue;
          var o9 = 9 * t, nx = nrm[o9], ny = nrm[o9 + 1], nz = nrm[o9 + 2];
          var wx = M[0] * nx + M[4] * ny + M[8] * nz, wy = M[1] * nx + M[5] * ny + M[9] * nz,
            wz = M[2] * nx + M[6] * ny + M[10] * nz;
          shade[n] = 0.35 + 0.65 * Math.abs(wx * L[0] + wy * L[1] + wz * L[2]);
          depth[n] = zsum / 3; owner[n] = b; order[n] = n; n++;
        }
      }
      var idx = Array.prototype.slice.call(order.subarray(0, n));
      idx.sort(function (i, j) { return depth[j] - depth[i]; });
      for (var q = 0; q < n; q++) {
        var i = idx[q], col = D.parts[owner[i]].color, f = shade[i];
        var rgb = 'rgba(' + Math.round(255 * col[0] * f) + ',' + Math.round(255 * col[1] * f) + ',' +
          Math.round(255 * col[2] * f) + ',' + col[3] + ')';
        ctx.fillStyle = rgb; ctx.strokeStyle = rgb; ctx.lineWidth = 0.5;
        ctx.beginPath(); ctx.moveTo(sx[3 * i], sy[3 * i]); ctx.lineTo(sx[3 * i + 1], sy[3 * i + 1]);
        ctx.lineTo(sx[3 * i + 2], sy[3 * i + 2]); ctx.closePath(); ctx.fill(); ctx.stroke();
      }
    };
  }

  var draw = null, rendererName = '';
  var want2d = /[?&]renderer=2d\b/.test(location.search);
  if (!want2d) {
    try { draw = makeWebGL(canvas); rendererName = 'webgl'; } catch (e) { draw = null; }
  }
  if (!draw) {
    var fresh = canvas.cloneNode(false);          /* a canvas keeps its first context type */
    canvas.parentNode.replaceChild(fresh, canvas);
    canvas = fresh;
    draw = make2D(canvas); rendererName = '2d';
  }
  root.setAttribute('data-renderer', rendererName);
  document.getElementById('cm-renderer').textContent = rendererName === 'webgl' ? 'WebGL' : '2-D canvas (no WebGL)';

  /* ---- playback ---- */
  var t0 = T[0], t1 = T[nt - 1], span = t1 - t0;
  var state = { t: t0, playing: nt > 1 && span > 0, speed: 1, last: null };
  var seen = {}, nseen = 0, dirty = true;
  var playBtn = document.getElementById('cm-play'), scrub = document.getElementById('cm-scrub'),
    label = document.getElementById('cm-time'), speedSel = document.getElementById('cm-speed');
  scrub.min = t0; scrub.max = t1; scrub.step = 'any'; scrub.value = t0;
  function setPlaying(p) { state.playing = p && span > 0; playBtn.textContent = state.playing ? 'Pause' : 'Play'; }
  setPlaying(state.playing);
  playBtn.addEventListener('click', function () { setPlaying(!state.playing); });
  scrub.addEventListener('input', function () { setPlaying(false); state.t = parseFloat(scrub.value); dirty = true; });
  speedSel.addEventListener('change', function () { state.speed = parseFloat(speedSel.value) || 1; });
  document.addEventListener('keydown', function (e) {
    if (e.key === ' ' && e.target === document.body) { e.preventDefault(); setPlaying(!state.playing); }
  });
  var drag = null;
  canvas.addEventListener('pointerdown', function (e) { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener('pointermove', function (e) {
    if (!drag) return;
    cam.az -= (e.clientX - drag[0]) * 0.01;
    cam.el = Math.max(-1.55, Math.min(1.55, cam.el + (e.clientY - drag[1]) * 0.01));
    drag = [e.clientX, e.clientY]; dirty = true;
  });
  canvas.addEventListener('pointerup', function () { drag = null; });
  canvas.addEventListener('wheel', function (e) {
    e.preventDefault(); cam.dist *= Math.exp(Math.max(-100, Math.min(100, e.deltaY)) * 0.002); dirty = true;
  }, { passive: false });
  canvas.addEventListener('dblclick', function () { resetView(); dirty = true; });
  window.addEventListener('resize', function () { dirty = true; });

  var failed = false, lastFrame = -Infinity;
  function tick(now) {
    if (failed) return;
    try {
      if (state.playing) {
        // the animation frames' clock and the timers' (performance.now) differ: a frame stamped before the
        // last timer's tick must not run the time backwards (it went 2.8 s below the start in a headless browser)
        if (state.last !== null && now > state.last) {
          state.t += (now - state.last) / 1000 * state.speed;
          if (state.t > t1) state.t = t0 + ((state.t - t0) % span);
        }
        if (state.last === null || now > state.last) state.last = now;
        dirty = true;
      } else { state.last = null; }
      if (dirty) {
        var ks = bracket(state.t), k = ks[1] >= 0.5 && nt > 1 ? ks[0] + 1 : ks[0];
        draw(ks[0], ks[1]);
        dirty = false;
        if (!seen[k]) { seen[k] = true; nseen++; }
        if (state.playing) scrub.value = state.t;
        label.textContent = 't = ' + state.t.toFixed(3) + ' s   frame ' + (k + 1) + '/' + nt;
        if (root.getAttribute('data-status') !== 'error') root.setAttribute('data-status', 'ok');
        root.setAttribute('data-frame', String(k));
        root.setAttribute('data-frames-seen', String(nseen));
        if (SHOWN) {
          var marks = 0;
          for (var b = 0; b < nb; b++) if (D.parts[b].marker && shown(b, ks[0], ks[1])) marks++;
          root.setAttribute('data-markers', String(marks));
        }
      }
    } catch (e) { failed = true; fail(e && e.message ? e.message : e); }
  }
  function frame(now) {
    lastFrame = performance.now();
    tick(now);
    if (!failed) requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
  // where animation frames stall (a headless browser under virtual time, a hidden tab), timers draw
  // instead, so that the page still plays and reports its status
  setInterval(function () {
    if (performance.now() - lastFrame > 250) tick(performance.now());
  }, 100);
})();
