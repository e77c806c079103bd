"""Hand-written texts for the short-article check: articles, and the page furniture that surrounds them.

Every text here was written for this set (fictional places, people and events). ``ARTICLES`` are the main
content (the reference); ``RAILS``, ``COMMENTS`` and ``TEASERS`` are what news and blog sites put around an
article (latest-news lists, reader comments, related-article cards), in the article's language.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Article:
    slug: str
    lang: str
    title: str
    byline: str
    date: str
    paragraphs: tuple[str, ...]  # a paragraph starting with "## " is a subheading


ARTICLES: tuple[Article, ...] = (
    Article(
        "ferry-strike", "en", "Ferry crews walk out on the Karrow crossing", "By Dana Whitlock", "2026-03-14",
        (
            "Crews on the Karrow Sound ferries stopped work at six this morning, leaving around two thousand "
            "commuters without their usual crossing to the mainland.",
            "The union says the operator cut rest periods between sailings without consulting staff. The "
            "operator said it would publish a revised timetable by noon and that the evening sailings may run.",
            "Buses are being laid on from the north pier to the road bridge, about forty minutes away.",
        ),
    ),
    Article(
        "library-roof", "en", "Old library reopens after roof repairs", "Priya Nandakumar", "2026-01-09",
        (
            "The Westmere public library reopened on Monday after eleven months of work on its Victorian roof, "
            "which had let rain into the reading room for most of the last decade.",
            "Volunteers moved about nine thousand books into storage before the scaffolding went up. Most are "
            "back on the shelves, although the local history collection will return in stages over the spring "
            "while its archive boxes are checked for damp.",
            "## What changed inside",
            "The reading room now has a lift to the gallery, new lighting along the stacks and a small room for "
            "school groups. The old card catalogue, long out of use, stays in the entrance hall as a display.",
            "Opening hours are unchanged: nine to seven on weekdays and ten to four on Saturdays. The head "
            "librarian, Moira Tench, thanked readers for their patience and said the building should now stay "
            "dry for another century.",
        ),
    ),
    Article(
        "orchard-frost", "en", "Late frost costs orchards half their blossom", "Tom Alder, rural affairs",
        "2026-04-22",
        (
            "Fruit growers in the Elm Valley say a hard frost on Tuesday night destroyed up to half of the apple "
            "and pear blossom, weeks after an unusually warm March brought the trees into flower early.",
            "Temperatures fell to minus four degrees just before dawn. Some growers lit candles between the rows "
            "and ran fans to mix warmer air down from above, but on the lower slopes that was not enough.",
            "\u201cWe will not know the full picture until the fruit sets in May,\u201d said Jonah Reyes, who "
            "farms forty hectares near Castleford. \u201cBut the flowers on the bottom rows are brown all the way "
            "through.\u201d",
            "Growers' associations are asking the regional council to extend the emergency loans it offered "
            "after last year's hailstorms. A decision is expected next week.",
        ),
    ),
    Article(
        "tram-line", "de", "Neue Straßenbahnlinie fährt ab Sonntag", "Von Katrin Mahler", "2026-05-02",
        (
            "Ab Sonntag verbindet die neue Linie 7 den Hauptbahnhof mit dem Wohngebiet am Lindenhang. Die "
            "Bahnen fahren tagsüber alle zehn Minuten, am späten Abend alle zwanzig.",
            "Die Bauarbeiten haben knapp drei Jahre gedauert und rund 84 Millionen Euro gekostet, etwas mehr als "
            "ursprünglich geplant. Grund waren vor allem Leitungen im Boden, die in keinem Plan verzeichnet "
            "waren.",
            "Am Eröffnungstag ist die Fahrt auf der gesamten Linie kostenlos. Die Buslinie 31, die bisher den "
            "Lindenhang anfuhr, wird zum Monatsende eingestellt.",
        ),
    ),
    Article(
        "bakery-prize", "de", "Bäckerei aus Talheim gewinnt Brotpreis", "Jonas Ebert", "2026-02-17",
        (
            "Die Bäckerei Wendt aus Talheim hat den diesjährigen Landespreis für Handwerksbrot gewonnen. Die Jury "
            "lobte vor allem das Roggenbrot mit Sauerteig, das nach einem Rezept der Großmutter des Inhabers "
            "gebacken wird.",
            "Der Betrieb beschäftigt sieben Mitarbeiter und backt jede Nacht rund 600 Brote. Das Preisgeld von "
            "5.000 Euro will Inhaber Lukas Wendt in einen neuen Steinofen stecken.",
        ),
    ),
    Article(
        "marche-couvert", "fr", "Le marché couvert rouvre ses portes", "Par Élodie Garnier", "2026-03-28",
        (
            "Après dix-huit mois de travaux, le marché couvert de Saint-Aubin accueille de nouveau les "
            "commerçants et leurs clients depuis samedi matin.",
            "La charpente métallique, datant de 1898, a été entièrement repeinte et la verrière remplacée. Les "
            "étals ont été redessinés pour laisser plus de place entre les allées, une demande ancienne des "
            "habitués.",
            "Trente-deux commerçants ont retrouvé leur emplacement, et quatre nouveaux producteurs de la vallée "
            "se sont installés. Le marché est ouvert du mardi au dimanche, de sept heures à treize heures.",
            "La mairie prévoit une fête d'inauguration le 12 avril, avec un concert sur le parvis.",
        ),
    ),
    Article(
        "velo-greve", "fr", "Les vélos en libre-service suspendus pour une semaine", "Rédaction", "2026-06-03",
        (
            "Le service de vélos en libre-service de la métropole sera suspendu du lundi 8 au dimanche 14 juin, "
            "le temps de remplacer le logiciel des bornes.",
            "Les abonnés recevront une semaine gratuite en compensation. Les vélos resteront attachés aux "
            "stations pendant toute la durée des travaux.",
        ),
    ),
    Article(
        "sequia-embalse", "es", "El embalse de Valdería, al 18 por ciento", "Marta Quiroga", "2026-08-11",
        (
            "El embalse de Valdería se encuentra al 18 por ciento de su capacidad, la cifra más baja registrada "
            "en un mes de agosto desde que comenzaron las mediciones en 1972.",
            "La confederación hidrográfica ha pedido a los ayuntamientos de la comarca que limiten el riego de "
            "parques y jardines a las horas nocturnas y que revisen las fugas de la red de abastecimiento.",
            "## Restricciones para el regadío",
            "Los regantes tendrán un cupo de agua un tercio menor que el del año pasado. Las organizaciones "
            "agrarias han convocado una reunión el jueves para estudiar la situación.",
            "Los técnicos recuerdan que el embalse se recuperó en 2019 tras un otoño lluvioso, pero advierten de "
            "que las previsiones para septiembre no son favorables.",
        ),
    ),
    Article(
        "festival-cine", "es", "Un cortometraje local, premiado en el festival", "Redacción", "2026-10-05",
        (
            "El cortometraje \u00abLa última barca\u00bb, rodado en el puerto de Arenales con vecinos como "
            "actores, ha ganado el premio del público en el festival de cine de la costa.",
            "Su directora, Lucía Ferrer, explicó que la historia nació de las conversaciones con su abuelo, que "
            "fue barquero durante cuarenta años.",
        ),
    ),
    Article(
        "eki-bento", "ja", "駅弁の新作、三日で完売", "文・佐藤 由美", "2026-07-19",
        (
            "北浜駅で今月発売された新しい駅弁「港のちらし寿司」が、販売開始からわずか三日で用意した二千食を売り切った。",
            "地元の漁港で朝にとれた魚を使い、駅前の弁当店が一つずつ手作業で詰めている。価格は千二百円。",
            "店主の高田さんは「これほど反響があるとは思わなかった。来週から一日の数を増やしたい」と話している。",
        ),
    ),
    Article(
        "toshokan-ame", "ja", "雨漏りの図書館、改修を終え再開", "地域報道部", "2026-09-02",
        (
            "長年雨漏りに悩まされてきた南町図書館が、半年間の改修工事を終えて一日から利用を再開した。",
            "屋根の防水工事に加え、閲覧室の照明を入れ替え、車いすで使える机も増やした。"
            "休館中に預けていた郷土資料は、状態を確認しながら順次書架に戻す予定だ。",
            "開館時間は以前と同じ午前九時から午後七時まで。月曜日は休館となる。",
        ),
    ),
    Article(
        "ponte-obras", "pt", "Ponte velha fecha para obras durante o verão", "Por Ricardo Matos", "2026-06-20",
        (
            "A ponte velha sobre o rio Lis vai estar fechada ao trânsito entre julho e setembro, para a "
            "substituição do tabuleiro e a reparação dos pilares.",
            "Os peões poderão continuar a atravessar por um passadiço provisório. Os autocarros serão desviados "
            "pela ponte nova, o que deve acrescentar cerca de dez minutos às viagens para o centro.",
        ),
    ),
)

# "Latest news" / "Top stories" rails: headline, byline, time. One list per language.
RAILS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "en": (
        ("Council approves budget for coastal defences after long debate", "By Sam Okafor", "2 hours ago"),
        ("Hospital car park to close for resurfacing next month", "By Ellen Marsh", "3 hours ago"),
        ("School sports day moved indoors as storms approach the region", "By Ravi Desai", "4 hours ago"),
        ("Police appeal for witnesses after lorry overturns on the ring road", "By Claire Fenwick", "5 hours ago"),
        ("Community garden wins national award for its wildflower meadow", "By Owen Pryce", "6 hours ago"),
        ("Harbour master warns sailors about shifting sandbanks near the estuary", "By Nia Hughes", "7 hours ago"),
        ("New bus timetable promises more evening services to the villages", "By Lucy Grant", "8 hours ago"),
        ("Local choir to sing at the cathedral for the first time in decades", "By Martin Dowd", "9 hours ago"),
    ),
    "de": (
        ("Stadtrat beschließt neue Parkgebühren für die Innenstadt", "Von Anna Krüger", "vor 1 Stunde"),
        ("Freibad öffnet wegen der Hitze schon Anfang Mai", "Von Tobias Lang", "vor 2 Stunden"),
        ("Unbekannte beschädigen Bänke im Stadtpark", "Von Sabine Roth", "vor 3 Stunden"),
        ("Gymnasium erhält Preis für sein Umweltprojekt am Fluss", "Von Felix Brandt", "vor 4 Stunden"),
        ("Umleitung auf der B 27 wegen Brückenarbeiten bis Herbst", "Von Jana Wolf", "vor 5 Stunden"),
        ("Chor aus dem Ortsteil feiert sein hundertjähriges Bestehen", "Von Peter Haas", "vor 6 Stunden"),
    ),
    "fr": (
        ("Le conseil municipal vote la rénovation de l'école Jules-Ferry", "Par Camille Roux", "il y a 1 h"),
        ("Une fuite d'eau prive trois quartiers de courant pendant la nuit", "Par Hugo Petit", "il y a 2 h"),
        ("Le club de rugby accède à la division supérieure", "Par Léa Moreau", "il y a 3 h"),
        ("La piscine municipale ferme deux semaines pour vidange", "Par Nathan Blanc", "il y a 4 h"),
        ("Un nouveau sentier de randonnée balisé le long du canal", "Par Julie Faure", "il y a 5 h"),
        ("Les horaires de la médiathèque changent à partir de septembre", "Par Louis Girard", "il y a 6 h"),
    ),
    "es": (
        ("El ayuntamiento aprueba la reforma de la plaza mayor", "Por Javier Soto", "hace 1 hora"),
        ("Cortes de tráfico en el centro por las fiestas patronales", "Por Elena Ruiz", "hace 2 horas"),
        ("El equipo juvenil de balonmano gana el torneo regional", "Por Andrés Gil", "hace 3 horas"),
        ("Abre una nueva biblioteca en el barrio de San Roque", "Por Carmen Vidal", "hace 4 horas"),
        ("La lluvia obliga a suspender el mercado medieval del domingo", "Por Pablo Núñez", "hace 5 horas"),
        ("Los vecinos piden más frecuencias en la línea de autobús 4", "Por Rosa Méndez", "hace 6 horas"),
    ),
    "ja": (
        ("市議会、来年度予算案を可決　子育て支援を拡充", "文・中村 健", "1時間前"),
        ("台風接近で週末の花火大会が延期に", "文・小林 彩", "2時間前"),
        ("駅前広場の再整備、秋に着工へ", "文・山本 剛", "3時間前"),
        ("高校野球、地元校が二十年ぶりの決勝進出", "文・加藤 舞", "4時間前"),
        ("市営プール、今年は七月一日から営業", "文・吉田 誠", "5時間前"),
        ("商店街で夏祭り、三年ぶりに夜店が並ぶ", "文・松本 葵", "6時間前"),
    ),
    "pt": (
        ("Câmara aprova obras no mercado municipal", "Por Inês Costa", "há 1 hora"),
        ("Festival de verão anuncia mais dois dias de concertos", "Por Tiago Lopes", "há 2 horas"),
        ("Escola secundária recebe prémio de sustentabilidade", "Por Marta Sousa", "há 3 horas"),
        ("Nova ciclovia liga o centro à praia", "Por João Pinto", "há 4 horas"),
        ("Biblioteca alarga horário durante a época de exames", "Por Ana Ribeiro", "há 5 horas"),
        ("Incêndio em armazém obriga a cortar estrada nacional", "Por Rui Faria", "há 6 horas"),
    ),
}

# Reader comments: author, time, text.
COMMENTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "en": (
        ("harbourwatcher", "1 hour ago", "This happens every spring and nobody ever seems to plan for it."),
        ("J. Pellow", "50 minutes ago", "Good to see this covered. My neighbours had no idea until this morning."),
        ("quietreader", "42 minutes ago", "Does anyone know whether the weekend arrangements are affected too?"),
        ("Margaret B", "30 minutes ago", "Thanks for the update, very clear. Sharing with our residents' group."),
        ("northpier", "12 minutes ago", "The buses this morning were packed. Please add more of them tomorrow."),
    ),
    "de": (
        ("Bernd K.", "vor 40 Minuten", "Endlich! Darauf haben wir im Viertel lange gewartet."),
        ("lindenfan", "vor 25 Minuten", "Hoffentlich wird der Takt am Wochenende auch dichter."),
        ("R. Schulte", "vor 10 Minuten", "Glückwunsch, das Brot ist wirklich das beste weit und breit."),
    ),
    "fr": (
        ("Mireille", "il y a 35 min", "Bravo aux équipes, le résultat est superbe."),
        ("JP_44", "il y a 20 min", "Dommage que le parking n'ait pas été agrandi en même temps."),
        ("Claire D.", "il y a 5 min", "On y était samedi, il y avait un monde fou !"),
    ),
    "es": (
        ("Antonio R.", "hace 30 minutos", "Cada verano lo mismo y nadie hace nada para evitarlo."),
        ("mariluz", "hace 18 minutos", "Enhorabuena a todo el equipo, se lo merecen."),
        ("vecino_del_puerto", "hace 6 minutos", "¿Alguien sabe si lo van a proyectar en el cine municipal?"),
    ),
    "ja": (
        ("みなと太郎", "30分前", "週末に買いに行ったけど、もう売り切れでした。"),
        ("読書好き", "20分前", "再開を待っていました。照明が明るくなって読みやすいです。"),
        ("ひまわり", "5分前", "数を増やしてくれるのはうれしいですね。"),
    ),
    "pt": (
        ("Joaquim", "há 30 minutos", "Já era tempo, a ponte estava num estado lastimável."),
        ("Sofia M.", "há 15 minutos", "E os moradores da margem sul, como fazem durante três meses?"),
    ),
}

# Related-article cards: headline and a one-sentence summary.
TEASERS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        ("How the old harbour wall was rebuilt", "Engineers spent two winters replacing the stones one by one."),
        ("Ten walks along the estuary this autumn", "Our pick of routes for families, dog owners and birdwatchers."),
        ("Why the ring road keeps flooding", "Drains laid in the 1970s cannot cope with today's storms."),
        ("Meet the last lamplighter of Westmere", "For forty years he lit the gas lamps on the promenade by hand."),
        ("Inside the town's busiest café", "From five in the morning the queue reaches the door."),
        ("What the new planning rules mean for you", "A short guide to extensions, sheds and loft conversions."),
    ),
    "de": (
        ("So entstand das neue Rathausdach", "Handwerker aus der Region arbeiteten ein Jahr lang daran."),
        ("Die schönsten Radwege im Umland", "Fünf Touren für Familien und Ausflügler."),
        ("Wie sicher sind unsere Brücken?", "Ein Gutachten nennt drei Bauwerke als dringend sanierungsbedürftig."),
        ("Ein Tag in der Backstube", "Um zwei Uhr nachts beginnt die Arbeit, wenn die Stadt noch schläft."),
    ),
    "fr": (
        ("Les secrets de la verrière restaurée", "Un atelier de la région a taillé chaque vitre sur mesure."),
        ("Cinq balades le long du canal", "Nos itinéraires préférés pour les beaux jours."),
        ("Pourquoi les loyers augmentent dans le centre", "Les agences pointent le manque de logements neufs."),
        ("Portrait d'un fromager passionné", "Depuis trente ans, il affine ses tommes dans une ancienne cave."),
    ),
    "es": (
        ("Así se construyó la presa en los años sesenta", "Más de mil obreros trabajaron durante cuatro años."),
        ("Cinco rutas para descubrir la sierra", "Caminos señalizados para todos los niveles."),
        ("Qué hacer para ahorrar agua en casa", "Pequeños gestos que reducen el consumo a la mitad."),
        ("El último astillero artesanal de la costa", "Tres generaciones de carpinteros de ribera."),
    ),
    "ja": (
        ("港町の朝市を歩く", "夜明け前から並ぶ魚と野菜、そして常連客の会話。"),
        ("駅弁の歴史をたどる", "明治時代から続く味と、その移り変わり。"),
        ("夏休みに行きたい県内の博物館", "子どもと楽しめる展示を集めました。"),
        ("商店街の老舗を訪ねて", "百年続く和菓子店の三代目に話を聞いた。"),
    ),
    "pt": (
        ("A história da ponte velha", "Construída em 1912, sobreviveu a três cheias."),
        ("Cinco passeios à beira-rio", "Percursos para fazer com a família ao fim de semana."),
        ("Como poupar no passe mensal", "Descontos para estudantes e reformados explicados."),
        ("O último sapateiro da baixa", "Há cinquenta anos que conserta sapatos na mesma rua."),
    ),
}

LABELS: dict[str, dict[str, str]] = {
    "en": {"latest": "Latest news", "related": "Related articles", "comments": "Comments", "more": "Read more",
           "top": "Top stories", "next": "Read next", "newsletter": "Get our morning briefing in your inbox",
           "cookies": "We use cookies to improve your experience. Accept all cookies?", "home": "Home",
           "news": "News", "sport": "Sport", "culture": "Culture", "share": "Share this article"},
    "de": {"latest": "Neueste Meldungen", "related": "Das könnte Sie auch interessieren", "comments": "Kommentare",
           "more": "Weiterlesen", "top": "Top-Themen", "next": "Lesen Sie auch",
           "newsletter": "Unser Newsletter: jeden Morgen die wichtigsten Nachrichten",
           "cookies": "Wir verwenden Cookies. Alle akzeptieren?", "home": "Startseite", "news": "Nachrichten",
           "sport": "Sport", "culture": "Kultur", "share": "Artikel teilen"},
    "fr": {"latest": "Dernières actualités", "related": "À lire aussi", "comments": "Commentaires",
           "more": "Lire la suite", "top": "À la une", "next": "Lire ensuite",
           "newsletter": "Recevez notre lettre d'information chaque matin",
           "cookies": "Nous utilisons des cookies. Tout accepter ?", "home": "Accueil", "news": "Actualités",
           "sport": "Sport", "culture": "Culture", "share": "Partager l'article"},
    "es": {"latest": "Últimas noticias", "related": "Noticias relacionadas", "comments": "Comentarios",
           "more": "Leer más", "top": "Lo más leído", "next": "Te puede interesar",
           "newsletter": "Recibe nuestro boletín cada mañana", "cookies": "Usamos cookies. ¿Aceptar todas?",
           "home": "Portada", "news": "Noticias", "sport": "Deportes", "culture": "Cultura",
           "share": "Compartir"},
    "ja": {"latest": "新着ニュース", "related": "関連記事", "comments": "コメント", "more": "続きを読む",
           "top": "主要ニュース", "next": "次に読む", "newsletter": "毎朝のニュースをメールでお届けします",
           "cookies": "このサイトはクッキーを使用しています。同意しますか？", "home": "ホーム", "news": "ニュース",
           "sport": "スポーツ", "culture": "文化", "share": "この記事を共有"},
    "pt": {"latest": "Últimas notícias", "related": "Artigos relacionados", "comments": "Comentários",
           "more": "Ler mais", "top": "Destaques", "next": "Leia também",
           "newsletter": "Receba a nossa newsletter todas as manhãs", "cookies": "Usamos cookies. Aceitar todos?",
           "home": "Início", "news": "Notícias", "sport": "Desporto", "culture": "Cultura", "share": "Partilhar"},
}
