#include "text/abbreviations.h"

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace transerve::text {
namespace {

using Words = std::initializer_list<const char*>;

// Titles and reference words common to the languages written in Latin script.
constexpr Words kLatinAlways = {"Dr.",  "Drs.", "Prof.", "Gen.", "Lt.",  "Sgt.",   "Capt.",
                                "Col.", "Gov.", "Sen.",  "Rev.", "Fig.", "Figs.",  "Ref.",
                                "e.g.", "i.e.", "cf.",   "vs.",  "ca.",  "approx."};
constexpr Words kLatinBeforeNumber = {"No.",  "Nos.", "Nr.", "Vol.", "Ch.", "Sec.",
                                      "Art.", "Eq.",  "pp.", "Tab.", "Ex.", "Abs."};

struct LanguageWords {
  std::vector<std::string> always;
  std::vector<std::string> before_number;
  bool ordinals;
};

// Per language: what it adds to the Latin-script lists. A title that also names a place or
// ends a clause often ("St." for street, "Jr.") stays out: a missed break costs less than a
// sentence run into the next.
const std::map<std::string, LanguageWords, std::less<>>& Languages() {
  static const auto* languages = new std::map<std::string, LanguageWords, std::less<>>{
      {"en",
       {{"Mr.", "Mrs.", "Ms.", "Messrs.", "Sr.", "Mt.", "Ave.", "Dept.", "Corp."}, {}, false}},
      {"de",
       {{"Hr.", "Fr.", "bzw.", "vgl.", "Abb.", "evtl.", "ggf.", "inkl.", "zzgl.", "Dipl.", "Ing."},
        {"S.", "Bd."},
        true}},
      {"fr", {{"M.", "MM.", "Mme.", "Mlle.", "Me.", "env.", "p.ex."}, {"p.", "n°."}, false}},
      {"es", {{"Sr.", "Sra.", "Srta.", "Dra.", "Ud.", "Uds.", "Excmo."}, {"pág.", "núm."}, false}},
      {"it", {{"Sig.", "Sig.ra.", "Dott.", "Ing.", "Avv."}, {"pag."}, false}},
      {"pt", {{"Sr.", "Sra.", "Dra.", "Exmo."}, {"pág."}, false}},
      {"nl", {{"dhr.", "mevr.", "bijv.", "o.a."}, {"blz."}, false}},
      {"da", {{"hr.", "fru.", "bl.a.", "f.eks."}, {}, true}},
      {"nb", {{"hr.", "fru.", "bl.a.", "f.eks."}, {}, true}},
      {"no", {{"hr.", "fru.", "bl.a.", "f.eks."}, {}, true}},
      {"sv", {{"bl.a.", "t.ex.", "d.v.s."}, {}, false}},
      {"fi", {{"esim.", "ns.", "ks."}, {}, true}},
      {"pl", {{"np.", "tzw.", "ok."}, {"str."}, true}},
      {"cs", {{"např.", "tzv.", "resp."}, {"str."}, true}},
      {"sk", {{"napr.", "tzv."}, {"str."}, true}},
      {"sl", {{"npr."}, {"str."}, true}},
      {"hr", {{"npr.", "tzv."}, {"str."}, true}},
      {"hu", {{"pl.", "ill."}, {"o."}, true}},
      {"ro", {{"dl.", "dna."}, {"pag."}, false}},
      {"ca", {{"Sr.", "Sra."}, {"pàg."}, false}},
      {"tr", {{"Sn.", "vb."}, {}, true}},
  };
  return *languages;
}

Abbreviations Build(const LanguageWords& words) {
  Abbreviations a;
  for (const char* w : kLatinAlways) a.always.insert(w);
  for (const char* w : kLatinBeforeNumber) a.before_number.insert(w);
  a.always.insert(words.always.begin(), words.always.end());
  a.before_number.insert(words.before_number.begin(), words.before_number.end());
  a.single_letters = true;
  a.ordinals = words.ordinals;
  return a;
}

}  // namespace

const Abbreviations& AbbreviationsFor(std::string_view language) {
  // "de_AT", "pt-BR": the language subtag decides.
  const std::string_view code = language.substr(0, language.find_first_of("_-@"));
  static const auto* lists = [] {
    auto* built = new std::map<std::string, Abbreviations, std::less<>>;
    for (const auto& [name, words] : Languages()) built->emplace(name, Build(words));
    return built;
  }();
  static const Abbreviations* none = new Abbreviations;
  const auto it = lists->find(code);
  return it == lists->end() ? *none : it->second;
}

}  // namespace transerve::text
