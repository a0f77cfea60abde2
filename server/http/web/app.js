// The translation page: fills the language choices from GET /languages, streams a translation
// from POST /v1/translate/stream (Server-Sent Events) and shows each sentence with its
// alignment. Everything the server sends is put in the page as text, never as markup.
'use strict';

(() => {
  const WORD_START = '\u2581';  // SentencePiece's marker of a piece that begins a word
  const EOS = '</s>';
  // Besides each target piece's strongest source piece, any source piece with at least this
  // much of its attention counts as aligned.
  const ALIGNED_WEIGHT = 0.4;

  const byId = (id) => document.getElementById(id);
  const form = byId('translate-form');
  const sourceLang = byId('source-lang');
  const targetLang = byId('target-lang');
  const format = byId('format');
  const sourceText = byId('source-text');
  const apiKey = byId('api-key');
  const button = byId('translate-button');
  const statusLine = byId('status');
  const errorLine = byId('error');
  const modelField = byId('model');
  const detectedField = byId('detected-language');
  const confidenceField = byId('confidence');
  const output = byId('output');
  const sentenceList = byId('sentences');

  let languages = [];  // as GET /languages answers: [{code, name, targets: [...]}]

  function setStatus(state, message) {
    statusLine.dataset.state = state;
    statusLine.textContent = message;
  }

  function showError(message) {
    errorLine.textContent = message;
    errorLine.hidden = false;
  }

  function clearError() {
    errorLine.textContent = '';
    errorLine.hidden = true;
  }

  // The browser's own names of languages, for codes /languages lists only as targets.
  const displayNames = (() => {
    try {
      return new Intl.DisplayNames([navigator.language || 'en'], {type: 'language'});
    } catch (_) {
      return null;
    }
  })();

  function languageName(code) {
    const language = languages.find((l) => l.code === code);
    if (language && language.name) return language.name;
    try {
      return (displayNames && displayNames.of(code)) || code;
    } catch (_) {
      return code;  // not a code the browser knows (Intl throws on malformed ones)
    }
  }

  function percent(probability) {
    return `${Math.round(probability * 100)}%`;
  }

  // The message of an HTTP error answer: the native API's {"error": {"message"}}, the
  // LibreTranslate API's {"error": "..."}, else the status line.
  async function errorMessage(response) {
    const body = await response.text();
    try {
      const error = JSON.parse(body).error;
      if (typeof error === 'string') return error;
      if (error && error.message) return error.message;
    } catch (_) {
      // Not JSON: fall through to the status.
    }
    return `HTTP ${response.status} ${response.statusText}`.trim();
  }

  function addOption(select, value, text) {
    const option = document.createElement('option');
    option.value = value;
    option.textContent = text;
    select.append(option);
  }

  // The targets of the chosen source; with "auto", every target any language has.
  function fillTargets() {
    const previous = targetLang.value;
    let targets;
    if (sourceLang.value === 'auto') {
      targets = [...new Set(languages.flatMap((l) => l.targets || []))];
    } else {
      const source = languages.find((l) => l.code === sourceLang.value);
      targets = source ? source.targets || [] : [];
    }
    targetLang.replaceChildren();
    for (const code of targets) addOption(targetLang, code, `${languageName(code)} (${code})`);
    if (targets.length === 0) addOption(targetLang, '', 'No model translates from it');
    if (targets.includes(previous)) targetLang.value = previous;
  }

  function authHeaders() {
    const key = apiKey.value.trim();
    return key ? {'Authorization': `Bearer ${key}`} : {};
  }

  async function loadLanguages() {
    try {
      const response = await fetch('/languages', {headers: authHeaders()});
      if (!response.ok) throw new Error(await errorMessage(response));
      const answer = await response.json();
      if (!Array.isArray(answer)) throw new Error('the server did not answer a list');
      languages = answer;
      for (const language of languages) {
        addOption(sourceLang, language.code, `${language.name} (${language.code})`);
      }
      fillTargets();
      clearError();
      setStatus('ready', 'Ready.');
    } catch (error) {
      showError(`The languages could not be loaded: ${error.message}`);
      setStatus('error', 'Not ready.');
    }
  }

  // LibreTranslate's settings say whether a key is needed: then the key field is unfolded.
  async function loadSettings() {
    try {
      const response = await fetch('/frontend/settings');
      if (!response.ok) return;
      const settings = await response.json();
      if (settings && settings.keyRequired) {
        byId('key-details').open = true;
      }
    } catch (_) {
      // Optional: without the settings the key field stays folded.
    }
  }

  // Groups a sentence's pieces into words: a piece with the word-start marker begins a word,
  // any other piece continues the current one. EOS is not shown. Returns the words
  // ({text, pieces: [piece indices]}) and, for each piece, the index of its word (-1: none).
  function groupWords(pieces) {
    const words = [];
    const wordOfPiece = [];
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i];
      if (piece === EOS) {
        wordOfPiece.push(-1);
        continue;
      }
      const startsWord = piece.startsWith(WORD_START);
      if (startsWord || words.length === 0) words.push({text: '', pieces: []});
      const word = words[words.length - 1];
      word.text += startsWord ? piece.slice(WORD_START.length) : piece;
      word.pieces.push(i);
      wordOfPiece.push(words.length - 1);
    }
    return {words, wordOfPiece};
  }

  // The source pieces that target piece `row` aligns to: its strongest non-EOS source piece,
  // and every one holding at least ALIGNED_WEIGHT of its attention.
  function alignedSourcePieces(alignment, row) {
    const width = alignment.sourceLength || 0;
    const weights = alignment.weights || [];
    const sourceTokens = alignment.sourceTokens || [];
    const aligned = new Set();
    let best = -1;
    for (let column = 0; column < width; column++) {
      if (sourceTokens[column] === EOS) continue;
      const weight = Number(weights[row * width + column]) || 0;
      if (best < 0 || weight > Number(weights[row * width + best])) best = column;
      if (weight >= ALIGNED_WEIGHT) aligned.add(column);
    }
    if (best >= 0) aligned.add(best);
    return aligned;
  }

  function wordSpans(container, words, className) {
    return words.map((word, index) => {
      if (index > 0) container.append(' ');
      const span = document.createElement('span');
      span.className = className;
      span.textContent = word.text;
      container.append(span);
      return span;
    });
  }

  function addSentence(sentence) {
    const item = document.createElement('li');
    item.className = 'sentence';
    item.id = `sentence-${sentenceList.children.length}`;
    const source = document.createElement('p');
    source.className = 'sentence-source';
    source.lang = sourceLang.value === 'auto' ? '' : sourceLang.value;
    const target = document.createElement('p');
    target.className = 'sentence-target';
    target.lang = targetLang.value;
    const meta = document.createElement('p');
    meta.className = 'sentence-meta';
    item.append(source, target, meta);

    const alignment = sentence.alignment;
    if (alignment && alignment.sourceTokens && alignment.targetTokens) {
      showAlignedWords(alignment, source, target);
    } else {
      source.textContent = sentence.source || '';
      target.textContent = sentence.text || '';
    }
    // The restored sentence (protected spans back in place), beside the model's pieces.
    target.title = sentence.text || '';
    if (typeof sentence.confidence === 'number') {
      meta.textContent = `confidence ${percent(Math.exp(sentence.confidence))}`;
    } else {
      meta.textContent = 'confidence 100%';  // 0 (certain) is left out of the JSON
    }
    sentenceList.append(item);
  }

  function showAlignedWords(alignment, sourceElement, targetElement) {
    const source = groupWords(alignment.sourceTokens);
    const target = groupWords(alignment.targetTokens);
    const sourceSpans = wordSpans(sourceElement, source.words, 'word source-word');
    const targetSpans = wordSpans(targetElement, target.words, 'word target-word');
    const clear = () => {
      for (const span of sourceSpans) span.classList.remove('aligned');
      for (const span of targetSpans) span.classList.remove('active');
    };
    target.words.forEach((word, index) => {
      const span = targetSpans[index];
      span.tabIndex = 0;
      const highlight = () => {
        clear();
        span.classList.add('active');
        for (const row of word.pieces) {
          if (row >= (alignment.targetLength || 0)) continue;
          for (const column of alignedSourcePieces(alignment, row)) {
            const sourceWord = source.wordOfPiece[column];
            if (sourceWord >= 0) sourceSpans[sourceWord].classList.add('aligned');
          }
        }
      };
      span.addEventListener('mouseenter', highlight);
      span.addEventListener('focus', highlight);
      span.addEventListener('mouseleave', clear);
      span.addEventListener('blur', clear);
    });
  }

  function showDetected(message) {
    if (!message.detectedLanguage) return;
    const confidence = message.detectedLanguageConfidence || 0;
    detectedField.textContent =
        `${languageName(message.detectedLanguage)} (${message.detectedLanguage}), ` +
        `${percent(confidence)} sure`;
  }

  // One translation in progress: what its messages have built so far.
  function newRun() {
    return {text: '', sentences: 0, done: false, failed: false};
  }

  function handleMessage(run, message) {
    if (message.model) modelField.textContent = message.model;
    showDetected(message);
    if (message.textDelta) {
      run.text += message.textDelta;
      output.textContent = run.text;
    }
    if (message.sentence) {
      addSentence(message.sentence);
      run.sentences++;
    }
    if (message.done && message.translation) {
      const translation = message.translation;
      // HTML comes as one final chunk: its sentences may be in the translation alone.
      const sentences = translation.sentences || [];
      if (run.sentences !== sentences.length) {
        sentenceList.replaceChildren();
        for (const sentence of sentences) addSentence(sentence);
        run.sentences = sentences.length;
      }
      run.text = translation.text || '';
      output.textContent = run.text;
      confidenceField.textContent = percent(Math.exp(translation.confidence || 0));
    }
  }

  function handleEvent(run, type, data) {
    if (type === 'done') {
      run.done = true;
    } else if (type === 'error') {
      let message = data;
      try {
        const error = JSON.parse(data).error;
        message = (error && error.message) || data;
      } catch (_) {
        // Not JSON: show it as it came.
      }
      run.failed = true;
      showError(message);
    } else {
      handleMessage(run, JSON.parse(data));
    }
  }

  // Reads Server-Sent Events from the response body: messages end with a blank line, their
  // "event:" line names them (none: a plain message) and their "data:" lines carry the JSON.
  async function readEvents(response, run) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let type = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;  // a comment (keep-alive)
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? '' : line.slice(colon + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'event') type = value;
          if (field === 'data') data.push(value);
        }
        if (data.length > 0) handleEvent(run, type, data.join('\n'));
      }
    }
  }

  function clearResult() {
    output.textContent = '';
    sentenceList.replaceChildren();
    modelField.textContent = '\u2013';
    detectedField.textContent = '\u2013';
    confidenceField.textContent = '\u2013';
  }

  async function translate(event) {
    event.preventDefault();
    clearError();
    clearResult();
    if (!targetLang.value) {
      showError('Choose a target language.');
      return;
    }
    const request = {
      texts: [sourceText.value],
      sourceLanguage: sourceLang.value,
      targetLanguage: targetLang.value,
      document: {format: format.value === 'html' ? 'FORMAT_HTML' : 'FORMAT_TEXT'},
      options: {returnAlignment: true},
    };
    const headers = {
      'Content-Type': 'application/json',
      'Accept': 'text/event-stream',
      ...authHeaders(),
    };

    button.disabled = true;
    setStatus('translating', 'Translating\u2026');
    const started = performance.now();
    const run = newRun();
    try {
      const response = await fetch('/v1/translate/stream',
                                   {method: 'POST', headers, body: JSON.stringify(request)});
      if (!response.ok) throw new Error(await errorMessage(response));
      await readEvents(response, run);
      if (!run.failed && !run.done) throw new Error('The stream ended before its end.');
    } catch (error) {
      run.failed = true;
      showError(error.message);
    } finally {
      button.disabled = false;
    }
    if (run.failed) {
      setStatus('error', 'The translation failed.');
    } else {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const count = run.sentences === 1 ? '1 sentence' : `${run.sentences} sentences`;
      setStatus('done', `Translated ${count} in ${seconds} s.`);
    }
  }

  sourceLang.addEventListener('change', fillTargets);
  // A server that wants a key for its languages too: try again once one is given.
  apiKey.addEventListener('change', () => {
    if (languages.length === 0) loadLanguages();
  });
  form.addEventListener('submit', translate);
  loadSettings();
  loadLanguages();
})();
