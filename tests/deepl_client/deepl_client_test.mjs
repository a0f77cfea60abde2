// DeepL's official Node.js client (deepl-node), unchanged, pointed at transerve with its
// serverUrl option: translate, languages, usage, glossary language pairs, the v2 glossary calls
// and the v3 (multilingual) ones, as an application using the library makes them.
//   node deepl_client_test.mjs http://127.0.0.1:PORT KEY
// Exits 0 when every check holds; prints each failure and exits 1 otherwise.
import assert from 'node:assert/strict';
import * as deepl from 'deepl-node';

const [serverUrl, key] = process.argv.slice(2);
const options = { serverUrl, maxRetries: 0, minTimeout: 60000 };
const translator = new deepl.Translator(key, options);
const client = new deepl.DeepLClient(key, options);

// Random lower-case terms no model writes by chance, and sentences holding them.
let seed = Number(process.env.SEED || Date.now() % 100000);
function random() {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}
const term = () => Array.from({ length: 6 }, () => 'abcdefghijklmnopqrstuvwxyz'[Math.floor(random() * 26)]).join('');
const words = ['the', 'house', 'is', 'small', 'and', 'green', 'we', 'city', 'with', 'red'];
const word = () => words[Math.floor(random() * words.length)];
const count = (hay, needle) => hay.split(needle).length - 1;

const checks = [];
function check(name, fn) {
  checks.push([name, fn]);
}

check('usage', async () => {
  const before = await translator.getUsage();
  assert.ok(before.character, 'character usage');
  await translator.translateText('the house is green.', 'en', 'de');
  const after = await translator.getUsage();
  assert.equal(after.character.count - before.character.count, 'the house is green.'.length);
  assert.ok(after.character.limit > after.character.count);
  assert.equal(after.anyLimitReached(), false);
});

check('languages', async () => {
  const sources = await translator.getSourceLanguages();
  assert.deepEqual(sources.map((l) => l.code), ['en']);
  assert.equal(sources[0].name, 'English');
  const targets = await translator.getTargetLanguages();
  assert.deepEqual(targets.map((l) => l.code), ['de']);
  assert.equal(targets[0].supportsFormality, false);
  const pairs = await translator.getGlossaryLanguagePairs();
  assert.deepEqual(pairs.map((p) => [p.sourceLang, p.targetLang]), [['en', 'de']]);
});

check('translateText: one text, several, auto-detected source, HTML', async () => {
  const one = await translator.translateText('the city is small.', 'en', 'de');
  assert.equal(typeof one.text, 'string');
  assert.equal(one.detectedSourceLang, 'en');
  assert.equal(one.billedCharacters, 'the city is small.'.length);
  const texts = Array.from({ length: 5 }, () => `${word()} ${word()} ${word()}.`);
  const many = await translator.translateText(texts, null, 'de');
  assert.equal(many.length, texts.length);
  for (const r of many) assert.equal(r.detectedSourceLang, 'en');
  const html = await translator.translateText('<p>the <b>house</b> is green.</p>', 'en', 'de', {
    tagHandling: 'html',
  });
  assert.equal(count(html.text, '<b>'), 1);
  assert.equal(count(html.text, '</p>'), 1);
});

check('errors come back as the library expects them', async () => {
  await assert.rejects(translator.translateText('x', 'en', 'fr'), (e) => e instanceof deepl.DeepLError);
  const wrong = new deepl.Translator(`${key}-wrong`, options);
  await assert.rejects(wrong.getUsage(), (e) => e instanceof deepl.AuthorizationError);
  await assert.rejects(translator.getGlossary('00000000-0000-4000-8000-000000000000'),
    (e) => e instanceof deepl.GlossaryNotFoundError);
});

check('v2 glossaries: create, list, get, entries, translate with it, delete', async () => {
  const entries = new deepl.GlossaryEntries();
  const terms = Array.from({ length: 12 }, () => [term(), `Zq${term()}`]);
  for (const [s, t] of terms) entries.add(s, t);
  const g = await translator.createGlossary('client v2', 'en', 'de', entries);
  assert.equal(g.ready, true);
  assert.equal(g.entryCount, 12);
  assert.equal(g.sourceLang, 'en');
  assert.equal(g.targetLang, 'de');
  assert.ok((await translator.listGlossaries()).some((x) => x.glossaryId === g.glossaryId));
  const got = await translator.getGlossary(g.glossaryId);
  assert.equal(got.name, 'client v2');
  assert.deepEqual((await translator.getGlossaryEntries(g)).entries(), entries.entries());
  const sentence = `${word()} ${terms[0][0]} ${word()} ${terms[5][0]} ${terms[0][0]}.`;
  const out = await translator.translateText(sentence, 'en', 'de', { glossary: g });
  assert.equal(count(out.text, terms[0][1]), 2, out.text);
  assert.equal(count(out.text, terms[5][1]), 1, out.text);
  await translator.deleteGlossary(g);
  await assert.rejects(translator.getGlossary(g.glossaryId), (e) => e instanceof deepl.GlossaryNotFoundError);
});

check('v3 glossaries: create, get, list, entries, update, replace, rename, delete', async () => {
  const first = new deepl.GlossaryEntries({ entries: { [term()]: 'Zqone', [term()]: 'Zqtwo' } });
  const g = await client.createMultilingualGlossary('client v3', [
    { sourceLangCode: 'en', targetLangCode: 'de', entries: first },
    { sourceLangCode: 'de', targetLangCode: 'en', entries: new deepl.GlossaryEntries({ entries: { haus: 'house' } }) },
  ]);
  assert.equal(g.dictionaries.length, 2);
  assert.equal((await client.getMultilingualGlossary(g.glossaryId)).name, 'client v3');
  assert.ok((await client.listMultilingualGlossaries()).some((x) => x.glossaryId === g.glossaryId));
  const dict = await client.getMultilingualGlossaryDictionaryEntries(g, 'en', 'de');
  assert.equal(dict.targetLangCode, 'de');
  assert.deepEqual(dict.entries.entries(), first.entries());
  const extra = term();
  const updated = await client.updateMultilingualGlossaryDictionary(g, {
    sourceLangCode: 'en', targetLangCode: 'de', entries: new deepl.GlossaryEntries({ entries: { [extra]: 'Zqthree' } }),
  });
  assert.equal(updated.dictionaries.find((d) => d.targetLangCode === 'de').entryCount, 3);
  const replaced = await client.replaceMultilingualGlossaryDictionary(g, {
    sourceLangCode: 'en', targetLangCode: 'de', entries: new deepl.GlossaryEntries({ entries: { [extra]: 'Zqfour' } }),
  });
  assert.equal(replaced.entryCount, 1);
  const out = await translator.translateText(`the ${extra} is red.`, 'en', 'de', { glossary: g.glossaryId });
  assert.equal(count(out.text, 'Zqfour'), 1, out.text);
  assert.equal((await client.updateMultilingualGlossaryName(g, 'renamed')).name, 'renamed');
  await client.deleteMultilingualGlossaryDictionary(g, 'de', 'en');
  assert.equal((await client.getMultilingualGlossary(g.glossaryId)).dictionaries.length, 1);
  await client.deleteMultilingualGlossary(g);
  await assert.rejects(client.getMultilingualGlossary(g.glossaryId));
});

let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}
console.log(`${checks.length - failed}/${checks.length} checks passed (seed ${process.env.SEED || ''})`);
process.exit(failed ? 1 : 0);
