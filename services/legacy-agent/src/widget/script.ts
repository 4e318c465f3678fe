/**
 * The web chat a site embeds (`{legacy_url}/v1/widget.js`): plain browser JavaScript, no framework, no
 * build step. Kept as a string here so the service bundle carries it; it must not contain backticks
 * or dollar-brace sequences. Styles are adopted into a shadow root, so the host page's CSS cannot
 * reach the chat and a strict Content-Security-Policy on the host page does not block them.
 */
export const WIDGET_SCRIPT = String.raw`/* Platform web chat. Embed: <script src="{legacy_url}/v1/widget.js" data-token="CLIENT_TOKEN" defer></script> */
(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || window.__platformChatLoaded) return;
  window.__platformChatLoaded = true;
  var token = script.getAttribute('data-token') || '';
  var base = script.src.replace(/\/v1\/widget\.js(?:[?#].*)?$/, '');

  var TEXTS = {
    en: { open: 'Open chat', close: 'Close chat', title: 'Chat', input: 'Your message', ask: 'How can I help you?', send: 'Send', typing: 'Typing…', you: 'You said', unreachable: 'The assistant cannot be reached from this page. Please try again later.', failed: 'Your message could not be sent.', tooFast: 'Sorry, too many messages were sent in a short time. Please wait a moment, then send yours again.', noToken: 'This chat is not set up: the page gives no assistant token.', opens: '(opens in a new tab)' },
    fr: { open: 'Ouvrir la discussion', close: 'Fermer la discussion', title: 'Discussion', input: 'Votre message', ask: 'Comment puis-je vous aider ?', send: 'Envoyer', typing: 'Écrit…', you: 'Vous avez dit', unreachable: "L'assistant est injoignable depuis cette page. Réessayez plus tard.", failed: "Votre message n'a pas pu être envoyé.", tooFast: 'Désolé, trop de messages ont été envoyés en peu de temps. Patientez un instant, puis renvoyez le vôtre.', noToken: "Cette discussion n'est pas configurée : la page ne donne pas de jeton d'assistant.", opens: '(nouvel onglet)' },
    de: { open: 'Chat öffnen', close: 'Chat schließen', title: 'Chat', input: 'Ihre Nachricht', ask: 'Wie kann ich Ihnen helfen?', send: 'Senden', typing: 'Schreibt…', you: 'Sie sagten', unreachable: 'Der Assistent ist von dieser Seite aus nicht erreichbar. Bitte später erneut versuchen.', failed: 'Ihre Nachricht konnte nicht gesendet werden.', tooFast: 'Entschuldigung, in kurzer Zeit wurden zu viele Nachrichten gesendet. Bitte warten Sie einen Moment und senden Sie Ihre dann erneut.', noToken: 'Dieser Chat ist nicht eingerichtet: die Seite nennt kein Assistenten-Token.', opens: '(neuer Tab)' },
    es: { open: 'Abrir chat', close: 'Cerrar chat', title: 'Chat', input: 'Tu mensaje', ask: '¿En qué puedo ayudarte?', send: 'Enviar', typing: 'Escribiendo…', you: 'Dijiste', unreachable: 'No se puede contactar con el asistente desde esta página. Inténtalo más tarde.', failed: 'No se pudo enviar tu mensaje.', tooFast: 'Lo sentimos, se enviaron demasiados mensajes en poco tiempo. Espera un momento y vuelve a enviar el tuyo.', noToken: 'Este chat no está configurado: la página no indica el token del asistente.', opens: '(nueva pestaña)' },
    it: { open: 'Apri chat', close: 'Chiudi chat', title: 'Chat', input: 'Il tuo messaggio', ask: 'Come posso aiutarti?', send: 'Invia', typing: 'Sta scrivendo…', you: 'Hai detto', unreachable: "Impossibile raggiungere l'assistente da questa pagina. Riprova più tardi.", failed: 'Impossibile inviare il messaggio.', tooFast: 'Spiacenti, sono stati inviati troppi messaggi in poco tempo. Attendi un momento, poi invia di nuovo il tuo.', noToken: "Questa chat non è configurata: la pagina non indica il token dell'assistente.", opens: '(nuova scheda)' },
    pt: { open: 'Abrir conversa', close: 'Fechar conversa', title: 'Conversa', input: 'A sua mensagem', ask: 'Como posso ajudar?', send: 'Enviar', typing: 'A escrever…', you: 'Você disse', unreachable: 'Não é possível contactar o assistente a partir desta página. Tente mais tarde.', failed: 'Não foi possível enviar a mensagem.', tooFast: 'Lamentamos, foram enviadas demasiadas mensagens em pouco tempo. Aguarde um momento e envie a sua novamente.', noToken: 'Esta conversa não está configurada: a página não indica o token do assistente.', opens: '(novo separador)' },
    nl: { open: 'Chat openen', close: 'Chat sluiten', title: 'Chat', input: 'Uw bericht', ask: 'Waarmee kan ik u helpen?', send: 'Verstuur', typing: 'Typt…', you: 'U zei', unreachable: 'De assistent is vanaf deze pagina niet bereikbaar. Probeer het later opnieuw.', failed: 'Uw bericht kon niet worden verstuurd.', tooFast: 'Sorry, er zijn te veel berichten kort na elkaar verstuurd. Wacht even en verstuur het uwe dan opnieuw.', noToken: 'Deze chat is niet ingesteld: de pagina geeft geen assistent-token.', opens: '(nieuw tabblad)' }
  };
  var MAX_ENTRIES = 200;
  /** spec 2.9's default placeholder: said in the chat's language */
  var DEFAULT_PLACEHOLDER = 'How can I help you?';
  var KEY = 'platform-chat:' + token;

  function load() {
    try { return JSON.parse(window.localStorage.getItem(KEY) || 'null'); } catch (e) { return null; }
  }
  function newId() {
    var c = window.crypto;
    if (c && c.randomUUID) return c.randomUUID();
    return 'u' + Date.now().toString(36) + Math.random().toString(36).slice(2);
  }
  var state = load() || {};
  if (typeof state.userId !== 'string') state.userId = newId();
  if (!Array.isArray(state.entries)) state.entries = [];
  // a disabled input holds in every tab until a reload (a reply with no button would trap the visitor)
  var nav = performance.getEntriesByType('navigation')[0];
  state.disableInput = !!state.disableInput && !(nav && nav.type === 'reload');
  function save() {
    state.entries = state.entries.slice(-MAX_ENTRIES);
    try { window.localStorage.setItem(KEY, JSON.stringify(state)); } catch (e) { /* full or disabled: the chat still works */ }
  }
  save();

  function texts() {
    var lang = String((state.config && state.config.lang) || document.documentElement.lang || 'en').toLowerCase().split('-')[0];
    // own members only: lang="constructor" must not find Object's
    return Object.prototype.hasOwnProperty.call(TEXTS, lang) ? TEXTS[lang] : TEXTS.en;
  }

  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    for (var k in attrs || {}) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') el.textContent = v;
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : v);
    }
    (children || []).forEach(function (c) { if (c) el.appendChild(c); });
    return el;
  }
  var safeUrl = function (u) { return typeof u === 'string' && /^https?:\/\//i.test(u) ? u : null; };

  var CSS = [
    ':host{all:initial}',
    '*{box-sizing:border-box}',
    '.root{--c:#4338ca;--c2:#3730a3;--bg:#fff;--muted:#f1f3f8;--ink:#1f2330;--soft:#5b6172;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink)}',
    '.sr{position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}',
    'button,input{font:inherit}',
    // a dark ring, a white band inside: seen on white, indigo and any page
    ':focus-visible{outline:3px solid #1e1b4b;outline-offset:2px;box-shadow:0 0 0 2px #fff}',
    '.launcher{position:fixed;right:20px;bottom:20px;z-index:2147483000;width:60px;height:60px;border-radius:50%;border:0;background:var(--c);color:#fff;cursor:pointer;box-shadow:0 8px 24px rgba(30,27,75,.35);display:grid;place-items:center;transition:transform .15s}',
    '.launcher:hover{transform:scale(1.06);background:var(--c2)}',
    '.launcher:focus-visible{box-shadow:0 0 0 2px #fff,0 8px 24px rgba(30,27,75,.35)}',
    '.launcher svg{width:28px;height:28px}',
    '.panel{position:fixed;right:20px;bottom:92px;z-index:2147483000;width:380px;max-width:calc(100vw - 24px);height:580px;max-height:calc(100vh - 112px);background:var(--bg);border-radius:18px;box-shadow:0 18px 50px rgba(15,23,42,.28);display:flex;flex-direction:column;overflow:hidden}',
    '.panel[hidden]{display:none}',
    '.head{display:flex;align-items:center;gap:12px;padding:14px 14px 14px 18px;background:linear-gradient(135deg,var(--c),#6d28d9);color:#fff}',
    '.avatar{width:38px;height:38px;border-radius:50%;background:rgba(255,255,255,.22);display:grid;place-items:center;font-weight:700;flex:none;object-fit:cover}',
    'h2{margin:0;font-size:16px;font-weight:650;flex:1;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}',
    '.close{border:0;background:transparent;color:#fff;width:36px;height:36px;border-radius:50%;cursor:pointer;font-size:22px;line-height:1}',
    '.close:hover{background:rgba(255,255,255,.18)}',
    '.close:focus-visible{outline-color:#fff;box-shadow:none}',
    '.log{flex:1;overflow-y:auto;padding:16px 14px;display:flex;flex-direction:column;gap:8px;background:#fafbfe}',
    '.log>*{flex:none}',
    '.log:focus-visible{outline-offset:-3px;box-shadow:none}',
    'p{margin:0}',
    '.msg{position:relative;max-width:85%;padding:9px 13px;border-radius:16px;white-space:pre-wrap;overflow-wrap:anywhere}',
    '.bot{align-self:flex-start;background:var(--muted);border-bottom-left-radius:5px}',
    '.user{align-self:flex-end;background:var(--c);color:#fff;border-bottom-right-radius:5px}',
    '.link{position:relative;align-self:flex-start;color:var(--c2);font-weight:600;text-decoration:underline;text-underline-offset:3px;padding:2px 4px}',
    '.chips{align-self:flex-start;display:flex;flex-wrap:wrap;gap:6px;max-width:95%}',
    '.chip{border:1.5px solid var(--c);background:#fff;color:var(--c2);border-radius:999px;padding:6px 14px;cursor:pointer;font-weight:600;font-size:14px}',
    '.chip:hover{background:var(--c);color:#fff}',
    '.cards{align-self:stretch;display:flex;gap:10px;overflow-x:auto;padding-bottom:4px}',
    '.card{flex:0 0 220px;border:1px solid #e3e6ef;border-radius:14px;background:#fff;overflow:hidden;display:flex;flex-direction:column}',
    '.card img{width:100%;height:120px;object-fit:cover;display:block}',
    '.card-body{padding:10px 12px;display:flex;flex-direction:column;gap:6px}',
    '.card h3{margin:0;font-size:15px}',
    '.card p{margin:0;color:var(--soft);font-size:14px}',
    '.typing{align-self:flex-start;color:var(--soft);font-style:italic;font-size:14px}',
    '.error{margin:0;padding:8px 14px;background:#fef2f2;color:#991b1b;font-size:14px;border-top:1px solid #fecaca}',
    '.error:empty{display:none}',
    'form{display:flex;gap:8px;padding:12px;border-top:1px solid #e8eaf2;background:#fff}',
    'input{flex:1;min-width:0;border:1.5px solid #767f90;border-radius:999px;padding:10px 16px;color:var(--ink);background:#fff}',
    'input:focus{border-color:var(--c)}',
    '.send{border:0;border-radius:999px;background:var(--c);color:#fff;padding:0 18px;font-weight:650;cursor:pointer}',
    '.send:hover{background:var(--c2)}',
    'button:disabled,input:disabled{opacity:.55;cursor:not-allowed}',
    // a phone: the panel fills the screen, closed from its header (the launcher would cover Send)
    '@media (max-width:480px){.panel{right:0;bottom:0;width:100vw;max-width:none;height:100vh;max-height:none;border-radius:0}.open .launcher{display:none}}',
    '@media (prefers-reduced-motion:reduce){.launcher{transition:none}}'
  ].join('\n');

  var hostEl = h('div', { 'data-platform-chat': '' });
  var shadow = hostEl.attachShadow({ mode: 'open' });
  if (shadow.adoptedStyleSheets !== undefined && window.CSSStyleSheet && CSSStyleSheet.prototype.replaceSync) {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    shadow.adoptedStyleSheets = [sheet];
  } else {
    shadow.appendChild(h('style', { text: CSS }));
  }

  var icon = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  icon.setAttribute('viewBox', '0 0 24 24');
  icon.setAttribute('aria-hidden', 'true');
  icon.setAttribute('focusable', 'false');
  var path = document.createElementNS('http://www.w3.org/2000/svg', 'path');
  path.setAttribute('fill', 'currentColor');
  // a speech bubble while closed, a chevron to the panel while open
  var BUBBLE = 'M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4H4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01z';
  var CHEVRON = 'M5.3 9.7l1.4-1.4 5.3 5.3 5.3-5.3 1.4 1.4-6.7 6.7z';
  path.setAttribute('d', BUBBLE);
  icon.appendChild(path);

  var launcher = h('button', { type: 'button', 'class': 'launcher', 'aria-expanded': 'false', 'aria-controls': 'chat-panel', onclick: function () { setOpen(panel.hidden); } }, [icon]);
  var title = h('h2', { id: 'chat-title' });
  var avatar = h('span', { 'class': 'avatar', 'aria-hidden': 'true' });
  var closeBtn = h('button', { type: 'button', 'class': 'close', text: '×', onclick: function () { setOpen(false); } });
  var log = h('div', { 'class': 'log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-labelledby': 'chat-title', tabindex: '0' });
  var errorLine = h('p', { 'class': 'error', role: 'alert' });
  var inputLabel = h('label', { 'for': 'chat-input', 'class': 'sr' });
  var input = h('input', { id: 'chat-input', type: 'text', autocomplete: 'off', maxlength: '4000', enterkeyhint: 'send' });
  var sendBtn = h('button', { type: 'submit', 'class': 'send' });
  var form = h('form', { onsubmit: function (e) { e.preventDefault(); var t = input.value.trim(); if (!t) return; input.value = ''; say({ text: t }, t, t); } }, [inputLabel, input, sendBtn]);
  var panel = h('section', { id: 'chat-panel', 'class': 'panel', role: 'dialog', 'aria-labelledby': 'chat-title', hidden: true, onkeydown: function (e) { if (e.key === 'Escape') { e.stopPropagation(); setOpen(false); } } },
    [h('div', { 'class': 'head' }, [avatar, title, closeBtn]), log, errorLine, form]);
  var root = h('div', { 'class': 'root' }, [panel, launcher]);
  shadow.appendChild(root);

  function applyTexts() {
    var t = texts();
    var config = state.config || {};
    var known = config.name;
    var name = known || t.title;
    if (config.lang) panel.setAttribute('lang', config.lang);
    title.textContent = name;
    var action = panel.hidden ? t.open : t.close;
    launcher.setAttribute('aria-label', known ? action + ': ' + name : action);
    closeBtn.setAttribute('aria-label', t.close);
    inputLabel.textContent = t.input;
    input.placeholder = (state.placeholder === DEFAULT_PLACEHOLDER ? t.ask : state.placeholder) || t.input + '…';
    sendBtn.textContent = t.send;
    avatar.textContent = '';
    var photo = config.photo && safeUrl(config.photo.url);
    if (photo) avatar.appendChild(h('img', { 'class': 'avatar', src: photo, alt: '' }));
    else avatar.textContent = name.charAt(0).toUpperCase();
  }

  function chip(text, onclick) {
    return h('button', { type: 'button', 'class': 'chip', text: text, onclick: onclick });
  }
  function valueChip(b) { return chip(b.text, function () { say({ text: b.value }, b.text); }); }
  function eventChip(e, name) { return chip(e.text, function () { say({ event: name }, e.text); }); }
  function linkEl(l, cls) {
    var href = safeUrl(l.value);
    if (!href) return h('span', { 'class': cls, text: l.text });
    return h('a', { 'class': cls, href: href, target: '_blank', rel: 'noopener noreferrer' }, [document.createTextNode(l.text + ' '), h('span', { 'class': 'sr', text: texts().opens })]);
  }
  function cardEl(c) {
    var img = safeUrl(c.image);
    var body = h('div', { 'class': 'card-body' }, [
      c.title ? h('h3', { text: c.title }) : null,
      c.text ? h('p', { text: c.text }) : null
    ]);
    (c.links || []).forEach(function (l) { body.appendChild(linkEl(l, 'link')); });
    var actions = (c.buttons || []).map(valueChip);
    if (c.event) actions.push(eventChip(c.event, c.event.value));
    if (actions.length) body.appendChild(h('div', { 'class': 'chips' }, actions));
    var picture = img ? h('img', { src: img, alt: c.title || '', onload: keepScrolled }) : null;
    return h('article', { 'class': 'card' }, [picture, body]);
  }

  /** One reply: its items in order, buttons and events as quick replies. */
  function renderReply(items) {
    var nodes = [];
    var chips = null;
    function flush() { if (chips) { nodes.push(h('div', { 'class': 'chips' }, chips)); chips = null; } }
    function addChip(node) { (chips = chips || []).push(node); }
    items.forEach(function (item) {
      if (item.button) return addChip(valueChip(item.button));
      if (item.event) return addChip(eventChip(item.event, item.event.value));
      if (item.events) return item.events.forEach(function (e) { addChip(eventChip(e, e.event)); });
      flush();
      var text = typeof item.text === 'string' ? item.text : typeof item.web === 'string' ? item.web : null;
      if (text !== null) nodes.push(h('p', { 'class': 'msg bot', text: text }));
      else if (item.links) nodes.push(linkEl(item.links, 'link'));
      else if (item.cards) nodes.push(h('div', { 'class': 'cards' }, item.cards.map(cardEl)));
    });
    flush();
    return nodes;
  }

  /** Keeps the newest message in view (images load after it). */
  function keepScrolled() { log.scrollTop = log.scrollHeight; }

  /** Shows one entry; gives a visitor's message's node (taken back if not sent). */
  function renderEntry(entry) {
    var you = null;
    if (entry.who === 'user') {
      you = h('p', { 'class': 'msg user' }, [h('span', { 'class': 'sr', text: texts().you + ': ' }), document.createTextNode(entry.text)]);
      log.appendChild(you);
    } else {
      renderReply(entry.items || []).forEach(function (n) { log.appendChild(n); });
    }
    log.scrollTop = log.scrollHeight;
    return you;
  }
  function renderAll() {
    log.textContent = '';
    var last = 0;
    state.entries.forEach(function (entry) { last = log.children.length; renderEntry(entry); });
    return last;
  }
  function push(entry) {
    state.entries.push(entry);
    save();
    return renderEntry(entry);
  }
  /** A message not sent leaves the conversation; typed text goes back into the input, after what it holds. */
  function takeBack(entry, node, typed) {
    for (var i = state.entries.length - 1; i >= 0; i--) if (state.entries[i].id === entry.id) { state.entries.splice(i, 1); break; }
    save();
    // shown again meanwhile from another tab's write: drawn again without it
    if (node && node.isConnected) node.remove();
    else renderAll();
    if (typed) input.value = input.value ? input.value + ' ' + typed : typed;
  }

  /** Input and Send follow the last reply (from log child 'from' on): disabled, their focus goes to its first choice. */
  function followReply(from) {
    var refocus = state.disableInput && (shadow.activeElement === input || shadow.activeElement === sendBtn);
    input.disabled = sendBtn.disabled = state.disableInput;
    if (!refocus) return;
    var choice = null;
    for (var i = from; i < log.children.length && !choice; i++) {
      var node = log.children[i];
      choice = node.matches('button, a') ? node : node.querySelector('button, a');
    }
    (choice || log).focus();
  }

  function showError(message) { errorLine.textContent = message || ''; }

  function call(method, path, body) {
    return fetch(base + path, {
      method: method,
      headers: Object.assign({ authorization: 'Bearer ' + token }, body && { 'content-type': 'application/json' }),
      body: body && JSON.stringify(body),
      credentials: 'omit'
    }).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (data) {
        if (!res.ok) {
          // the server's words are for the site's developer (the console), the chat's for a visitor
          var detail = data && ((data.status && data.status.errorDetails) || data.message);
          if (detail && window.console) console.warn('Chat: ' + detail);
          var refused = res.status === 401 || res.status === 403 || res.status === 404;
          throw new Error(res.status === 429 ? texts().tooFast : refused ? texts().unreachable : texts().failed);
        }
        return data;
      });
    }, function () { throw new Error(texts().unreachable); });
  }

  var queue = Promise.resolve();
  var typing = h('p', { 'class': 'typing', 'aria-hidden': 'true' });
  function send(body, onFailure) {
    queue = queue.then(function () {
      showError('');
      typing.textContent = texts().typing;
      log.appendChild(typing);
      log.setAttribute('aria-busy', 'true');
      log.scrollTop = log.scrollHeight;
      return call('POST', '/v1/Messages', Object.assign({ userId: state.userId, platform: 'web' }, body)).then(function (reply) {
        var items = [];
        (reply.fulfillment || []).forEach(function (f) { items = items.concat(f.items || []); });
        var settings = reply.intents && reply.intents[0] && reply.intents[0].settings;
        state.disableInput = !!(settings && settings.disableInput);
        state.placeholder = (settings && settings.placeholder) || null;
        applyTexts();
        typing.remove();
        var from = log.children.length;
        push({ who: 'bot', items: items });
        followReply(from);
      }).catch(function (err) {
        typing.remove();
        if (onFailure) onFailure();
        showError(err.message);
      }).then(function () { log.removeAttribute('aria-busy'); });
    });
    return queue;
  }
  /** Sends a message shown as the visitor's 'shown', if any: taken back if not sent, with 'typed' to the input. */
  function say(body, shown, typed) {
    if (!shown) return send(body);
    var entry = { who: 'user', text: shown, id: newId() };
    var node = push(entry);
    return send(body, function () { takeBack(entry, node, typed); });
  }

  var configLoaded = false;
  function loadConfig() {
    if (configLoaded) return Promise.resolve();
    return call('GET', '/v1/widget/config').then(function (config) {
      configLoaded = true;
      state.config = { name: config.name, lang: config.lang, photo: config.photo || null };
      save();
      applyTexts();
    }, function () { /* the Messages call then says what is wrong */ });
  }

  function showOpen(open) {
    panel.hidden = !open;
    root.classList.toggle('open', open);
    launcher.setAttribute('aria-expanded', String(open));
    path.setAttribute('d', open ? CHEVRON : BUBBLE);
    applyTexts();
  }

  var welcoming = false;
  /** An open chat with an empty conversation greets (opened or reloaded), not while a tab greets (a lock, a 10 s mark). */
  function greet() {
    if (!token) { showError(texts().noToken); return; }
    loadConfig().then(function () { navigator.locks ? navigator.locks.request(KEY, { ifAvailable: true }, welcome).catch(welcome) : welcome(); });
  }
  function welcome(lock) {
    var now = load() || state;
    if (lock === null || now.entries.length || welcoming || now.welcomeUntil > Date.now()) return;
    welcoming = true;
    state.welcomeUntil = Date.now() + 10000;
    save();
    return send({ event: 'WELCOME' }).then(function () { welcoming = false; delete state.welcomeUntil; save(); });
  }
  function setOpen(open) {
    showOpen(open);
    state.open = open;
    save();
    if (!open) { launcher.focus(); return; }
    keepScrolled();
    // a disabled input: focus goes to the conversation (its buttons)
    if (input.disabled) log.focus();
    else input.focus();
    greet();
  }

  // a tab left with its welcome on its way lets another greet
  window.addEventListener('pagehide', function () { if (welcoming) { delete state.welcomeUntil; save(); } });

  // Another tab wrote the conversation (one visitor, one conversation): shown here too, saved whole from here.
  window.addEventListener('storage', function (e) {
    if (e.key !== KEY) return;
    var next;
    try { next = JSON.parse(e.newValue || 'null'); } catch (err) { next = null; }
    if (!next || typeof next.userId !== 'string' || !Array.isArray(next.entries)) return;
    // focus in the log stays
    var focusAt = log.contains(shadow.activeElement) && [].indexOf.call(log.querySelectorAll('button, a'), shadow.activeElement);
    state.userId = next.userId;
    state.entries = next.entries;
    state.config = next.config || state.config;
    state.placeholder = next.placeholder || null;
    state.disableInput = !!next.disableInput;
    state.welcomeUntil = next.welcomeUntil;
    applyTexts();
    var from = renderAll();
    if (focusAt !== false) (log.querySelectorAll('button, a')[focusAt] || log).focus();
    followReply(from);
    if (log.hasAttribute('aria-busy')) log.appendChild(typing);
  });

  function start() {
    document.body.appendChild(hostEl);
    applyTexts();
    followReply(renderAll());
    if (state.open) {
      showOpen(true);
      keepScrolled();
      greet();
    }
  }
  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start);
})();
`;
