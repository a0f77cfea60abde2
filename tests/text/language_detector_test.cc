#include "text/language_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace transerve::text {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;
using ::testing::Not;

struct Sample {
  const char* code;
  const char* sentence;
};

// Written for this test: two ordinary sentences per language, none from a known corpus.
const Sample kSamples[] = {
    {"en", "The train to the coast was late again, so we had breakfast at the station."},
    {"en", "Please remember to water the tomatoes while I am away for the weekend."},
    {"de", "Gestern Abend haben wir im Garten gegrillt, bis es zu regnen anfing."},
    {"de", "Die Bibliothek bleibt wegen Renovierungsarbeiten bis Ende des Monats geschlossen."},
    {"fr", "Nous avons visité le marché du village avant de rentrer à la maison pour déjeuner."},
    {"fr", "Le médecin m'a conseillé de marcher un peu chaque jour et de boire plus d'eau."},
    {"es", "Mi hermana vive en un pequeño piso cerca del puerto y trabaja en una panadería."},
    {"es", "Si mañana hace buen tiempo, iremos a la montaña con los niños y el perro."},
    {"it", "Ogni mattina mio nonno compra il giornale e lo legge seduto al bar della piazza."},
    {"it", "Abbiamo perso il treno delle otto e siamo arrivati in ufficio con un'ora di ritardo."},
    {"pt", "O meu vizinho passa as tardes a consertar bicicletas velhas na garagem de casa."},
    {"pt", "Depois do jantar, fomos dar um passeio pela praia enquanto o sol se punha."},
    {"nl", "Mijn fiets is gisteren gestolen terwijl ik boodschappen aan het doen was."},
    {"nl", "De kinderen spelen elke middag voetbal op het grasveld achter de school."},
    {"pl", "W sobotę pojechaliśmy nad jezioro i całe popołudnie łowiliśmy ryby z wujkiem."},
    {"pl", "Moja babcia piecze najlepszy sernik w całej okolicy i nikomu nie zdradza przepisu."},
    {"ru", "Вчера вечером мы долго гуляли по набережной и разговаривали о путешествиях."},
    {"ru", "Моя сестра учится в университете и по выходным подрабатывает в книжном магазине."},
    {"uk", "Щоранку я п'ю каву на балконі й дивлюся, як прокидається наше місто."},
    {"uk", "Наша бабуся вирощує на городі помідори, огірки та багато різної зелені."},
    {"cs", "Včera jsme byli v kině a potom jsme šli na večeři do malé restaurace za rohem."},
    {"cs", "Můj bratr se učí hrát na kytaru a každý večer cvičí alespoň jednu hodinu."},
    {"sv", "I somras hyrde vi en liten stuga vid sjön och badade varje morgon före frukost."},
    {"sv", "Min granne har tre katter som gärna sover i solen på trappan utanför köket."},
    {"fi", "Eilen illalla kävimme saunassa ja sen jälkeen uimme järvessä kuutamossa."},
    {"fi", "Kirjasto on auki arkisin kahdeksasta kahdeksaan ja lauantaisin puoleenpäivään."},
    {"hu", "Tegnap este a barátaimmal elmentünk egy koncertre, és nagyon jól éreztük magunkat."},
    {"hu", "A nagymamám minden vasárnap finom húslevest főz az egész családnak."},
    {"tr", "Dün akşam arkadaşlarımla birlikte sahilde yürüyüş yaptık ve dondurma yedik."},
    {"tr", "Kardeşim her sabah erkenden kalkıp işe gitmeden önce koşuya çıkıyor."},
    {"el", "Χθες το βράδυ πήγαμε για φαγητό σε μια μικρή ταβέρνα κοντά στη θάλασσα."},
    {"el", "Η γιαγιά μου φτιάχνει την καλύτερη σπανακόπιτα σε όλο το χωριό."},
    {"ja", "昨日は友達と一緒に公園を散歩して、そのあと駅の近くの喫茶店でコーヒーを飲みました。"},
    {"ja", "来週の月曜日から新しい仕事が始まるので、今週末は部屋の片付けをするつもりです。"},
    {"zh", "我们昨天晚上在河边散步，然后去了一家小饭馆吃了很好吃的面条。"},
    {"zh", "这个周末我打算在家里看书，顺便把阳台上的花草整理一下。"},
    {"ko", "어제 저녁에 친구들과 함께 한강 공원에서 자전거를 타고 치킨을 먹었습니다."},
    {"ko", "우리 할머니는 매일 아침 일찍 일어나서 시장에 가서 신선한 채소를 사 오십니다."},
    {"ar", "ذهبنا أمس إلى السوق القديم واشترينا الكثير من الفواكه والخضروات الطازجة."},
    {"ar", "يحب أخي الصغير قراءة القصص قبل النوم كل ليلة مع والدتي."},
    {"he", "אתמול בערב הלכנו לטייל על שפת הים ואכלנו גלידה ליד המזח."},
    {"he", "השכנה שלנו מגדלת עגבניות ומלפפונים בגינה הקטנה מאחורי הבית."},
};

TEST(LanguageDetector, DetectsHandWrittenSentences) {
  for (const Sample& sample : kSamples) {
    std::vector<DetectedLanguage> got = DetectLanguages(sample.sentence);
    ASSERT_THAT(got, Not(IsEmpty())) << sample.sentence;
    EXPECT_EQ(got.front().code, sample.code) << sample.sentence;
    EXPECT_TRUE(got.front().reliable) << sample.sentence;
    EXPECT_GT(got.front().confidence, 0.8f) << sample.sentence;
  }
}

TEST(LanguageDetector, MapsCld2CodesToIso6391) {
  EXPECT_EQ(NormalizeLanguageCode("iw"), "he");
  EXPECT_EQ(NormalizeLanguageCode("zh-Hant"), "zh");
  EXPECT_EQ(NormalizeLanguageCode("no"), "nb");
  EXPECT_EQ(NormalizeLanguageCode("jw"), "jv");
  EXPECT_EQ(NormalizeLanguageCode("de"), "de");
  EXPECT_EQ(NormalizeLanguageCode("nn"), "nn");
  EXPECT_EQ(NormalizeLanguageCode("ceb"), "ceb");
}

TEST(LanguageDetector, TraditionalChineseIsZh) {
  auto got = DetectLanguages("我們昨天晚上在河邊散步，然後去了一家小飯館吃了很好吃的麵條。");
  ASSERT_THAT(got, Not(IsEmpty()));
  EXPECT_EQ(got.front().code, "zh");
}

TEST(LanguageDetector, NorwegianBokmalIsNb) {
  auto got = DetectLanguages(
      "I går kveld gikk vi en lang tur langs fjorden og spiste middag hos besteforeldrene "
      "mine.");
  ASSERT_THAT(got, Not(IsEmpty()));
  EXPECT_EQ(got.front().code, "nb");
}

TEST(LanguageDetector, NothingToDetectGivesEmpty) {
  EXPECT_THAT(DetectLanguages(""), IsEmpty());
  EXPECT_THAT(DetectLanguages("   \n\t "), IsEmpty());
  EXPECT_THAT(DetectLanguages("1234567890 3.14159 42"), IsEmpty());
  EXPECT_THAT(DetectLanguages("!!! ??? ... ---"), IsEmpty());
  EXPECT_THAT(DetectLanguages("😀🎉🚀👍"), IsEmpty());
}

TEST(LanguageDetector, ShortTextHasLowConfidence) {
  auto got = DetectLanguages("Hallo");
  // CLD2 may guess; whatever it says, five letters must not look certain.
  for (const DetectedLanguage& d : got) EXPECT_LT(d.confidence, 0.5f) << d.code;
}

TEST(LanguageDetector, AnswerCld2WithholdsIsUnreliableAtHalfConfidence) {
  // CLD2 gives nothing for this by default and Spanish when asked for its best effort.
  auto got = DetectLanguages(
      "Se produjo un error al crear el fichero temporal y no se pudo determinar la versión de "
      "la base de datos.");
  ASSERT_THAT(got, Not(IsEmpty()));
  EXPECT_EQ(got.front().code, "es");
  EXPECT_FALSE(got.front().reliable);
  EXPECT_GT(got.front().confidence, 0.4f);
  EXPECT_LE(got.front().confidence, 0.5f);
}

TEST(LanguageDetector, InvalidUtf8GivesEmptyWithoutCrashing) {
  const std::string sentence = kSamples[2].sentence;  // German, detected above
  const std::string bad[] = {
      sentence + "\xff",
      "\xc3" + sentence,                                   // lead byte without continuation
      sentence.substr(0, 20) + "\xed\xa0\x80" + sentence,  // an encoded surrogate
      sentence.substr(0, 20) + "\xc0\xaf" + sentence,      // overlong '/'
      std::string("\x80\x80\x80\x80", 4),
      sentence + std::string(1, '\0') + "\xfe\xfe",
  };
  for (const std::string& text : bad) EXPECT_THAT(DetectLanguages(text), IsEmpty());
}

TEST(LanguageDetector, TruncatedMultibyteCharacterIsInvalid) {
  const std::string russian = kSamples[16].sentence;
  // Cut inside the last Cyrillic letter before the period: two-byte letters, so back off one.
  const std::string cut = russian.substr(0, russian.size() - 2);
  EXPECT_THAT(DetectLanguages(cut), IsEmpty());
}

TEST(LanguageDetector, HtmlModeSkipsTags) {
  // Tag names, attributes and the script are English; the visible text is German.
  const std::string html =
      "<html><head><title>Reise</title><script>function update() { return window.location; "
      "}</script></head><body class=\"main content wrapper\"><div id=\"navigation-header\">"
      "Gestern Abend haben wir im Garten gegrillt, bis es zu regnen anfing. Die Bibliothek "
      "bleibt wegen Renovierungsarbeiten bis Ende des Monats geschlossen.</div>"
      "<a href=\"https://example.com/the/quick/brown/fox/jumps/over/the/lazy/dog\" "
      "title=\"the quick brown fox jumps over the lazy dog\">&Uuml;ber uns</a></body></html>";
  auto as_html = DetectLanguages(html, /*is_html=*/true);
  ASSERT_THAT(as_html, Not(IsEmpty()));
  EXPECT_EQ(as_html.front().code, "de");
  EXPECT_GT(as_html.front().confidence, 0.9f);
  // As plain text the markup counts as words, and pulls the German share down.
  auto as_text = DetectLanguages(html, /*is_html=*/false);
  ASSERT_THAT(as_text, Not(IsEmpty()));
  float german_as_text = 0;
  for (const DetectedLanguage& d : as_text) {
    if (d.code == "de") german_as_text = d.confidence;
  }
  EXPECT_LT(german_as_text, as_html.front().confidence);
}

TEST(LanguageDetector, ConfidencesAreInRangeAndOrdered) {
  const std::string mixed =
      std::string(kSamples[4].sentence) + " " + kSamples[5].sentence + " " + kSamples[16].sentence;
  std::vector<std::string> texts = {mixed, "Hallo", "ok", "Der Hund"};
  for (const Sample& s : kSamples) texts.push_back(s.sentence);
  for (const std::string& text : texts) {
    auto got = DetectLanguages(text);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_GE(got[i].confidence, 0.0f) << text;
      EXPECT_LE(got[i].confidence, 1.0f) << text;
      if (i == 0) continue;
      EXPECT_GE(got[i - 1].confidence, got[i].confidence) << text;
      EXPECT_FALSE(got[i].reliable) << "only the first entry carries the flag";
    }
  }
}

TEST(LanguageDetector, MixedTextGivesBothLanguages) {
  // Three French sentences, then a Russian one: French has the larger share. (CLD2's own
  // summary would say Russian here: it treats French, Italian, German and Spanish beside another
  // language as web-page boilerplate. A translation request has no boilerplate, so the larger
  // share comes first.)
  const std::string mixed = std::string(kSamples[4].sentence) + " " + kSamples[5].sentence +
                            " Les enfants jouent dans la cour pendant que leurs parents " +
                            "discutent sur le banc. " + kSamples[16].sentence;
  auto got = DetectLanguages(mixed);
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0].code, "fr");
  EXPECT_EQ(got[1].code, "ru");
  EXPECT_GT(got[1].confidence, 0.2f);
  EXPECT_FALSE(got[0].reliable) << "CLD2's flag is for its summary language, Russian";
  EXPECT_LT(got[0].confidence + got[1].confidence, 1.0001f);
}

TEST(LanguageDetector, MaxResultsLimitsTheList) {
  const std::string mixed = std::string(kSamples[4].sentence) + " " + kSamples[16].sentence;
  EXPECT_THAT(DetectLanguages(mixed, false, 0), IsEmpty());
  auto one = DetectLanguages(mixed, false, 1);
  ASSERT_EQ(one.size(), 1u);
  auto all = DetectLanguages(mixed);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(one.front(), all.front());
}

// Croatian that CLD2 reads as Bosnian (written for this test).
constexpr char kCroatianReadAsBosnian[] =
    "Nije uspjelo stvaranje privremene datoteke za spremanje podataka.";

TEST(LanguageDetectorAmong, MapsAnswerToTheOnlyCandidateOfItsCloseGroup) {
  auto plain = DetectLanguages(kCroatianReadAsBosnian);
  ASSERT_THAT(plain, Not(IsEmpty()));
  ASSERT_NE(plain.front().code, "hr") << "premise: CLD2 does not say hr here";
  auto among = DetectLanguagesAmong(kCroatianReadAsBosnian, {"de", "hr", "en"});
  ASSERT_THAT(among, Not(IsEmpty()));
  EXPECT_EQ(among.front().code, "hr");
  EXPECT_FLOAT_EQ(among.front().confidence, plain.front().confidence);
}

TEST(LanguageDetectorAmong, KeepsTheAnswerWhenTwoOfTheGroupAreCandidates) {
  auto plain = DetectLanguages(kCroatianReadAsBosnian);
  ASSERT_THAT(plain, Not(IsEmpty()));
  auto among = DetectLanguagesAmong(kCroatianReadAsBosnian, {"hr", "bs", "sr"});
  ASSERT_THAT(among, Not(IsEmpty()));
  EXPECT_EQ(among.front().code, plain.front().code);
  // hr and sr are both candidates: a bs answer has no single sibling to become.
  EXPECT_THAT(DetectLanguagesAmong(kCroatianReadAsBosnian, {"hr", "sr"}),
              ::testing::Not(::testing::Contains(Field(&DetectedLanguage::code, "bs"))));
}

TEST(LanguageDetectorAmong, DropsLanguagesOutsideTheCandidates) {
  const std::string mixed = std::string(kSamples[4].sentence) + " " + kSamples[5].sentence +
                            " Les enfants jouent dans la cour pendant que leurs parents " +
                            "discutent sur le banc. " + kSamples[16].sentence;
  auto among = DetectLanguagesAmong(mixed, {"ru", "de"});
  ASSERT_EQ(among.size(), 1u);
  EXPECT_EQ(among.front().code, "ru");
  EXPECT_FALSE(among.front().reliable) << "the flag was for the first answer overall";
  EXPECT_THAT(DetectLanguagesAmong(kSamples[2].sentence, {"fr", "es"}), IsEmpty());
  EXPECT_THAT(DetectLanguagesAmong(kSamples[2].sentence, {}), IsEmpty());
}

TEST(LanguageDetector, SameAnswerFromManyThreads) {
  std::vector<std::vector<DetectedLanguage>> expected;
  for (const Sample& s : kSamples) expected.push_back(DetectLanguages(s.sentence));
  constexpr int kThreads = 8;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < std::size(kSamples); ++i) {
          // Each thread walks the samples from a different start.
          size_t k = (i + t * 5) % std::size(kSamples);
          if (DetectLanguages(kSamples[k].sentence) != expected[k]) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ::testing::Each(0));
}

}  // namespace
}  // namespace transerve::text
