package main

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/textsearch"
)

// The names the preload gives plants: 2 or 3 words each, drawn from a
// vocabulary of vocabSize words with a Zipf-like law (the word of rank k is
// drawn with a probability proportional to 1/k^zipfExponent), like the words
// of real plant names: a few very common ("monstera", "green"), a long tail
// of rare ones. The vocabulary is 440 real plant words (common names,
// genera, epithets, colours, cultivars, some with accents: "café", "crème")
// padded with pronounceable synthetic words, a tenth of them accented, and
// 14 real but rare words at the very end of the ranking.
// Everything is a function of the id: the same id always gets the same
// name, tag and creation time, on every run and every machine.
const (
	vocabSize    = 3000
	zipfExponent = 1.1
	// threeWords is the share of names with three words (the rest have two).
	threeWords = 0.4
)

// createdBase is the creation time of plant 0; plant id was created id
// milliseconds later (10M plants span 2.8 hours), so sorting by created_at
// is sorting by id, and every plant has its own time.
var createdBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// commonWords are real plant words, the most common first: they take ranks
// 1, 2, ... of the vocabulary. Repeats (after folding) keep their first rank.
var commonWords = strings.Fields(`
monstera green ficus deliciosa pothos aloe fern palm snake variegata
golden cactus lily orchid rose philodendron calathea begonia succulent ivy
spider jade peace rubber fiddle leaf lyrata elastica vera basil
mint rosemary lavender thyme sage tomato pepper chili strawberry lemon
olive fig bamboo bonsai maple pine oak willow birch cedar
cypress juniper yucca agave echeveria sedum haworthia crassula kalanchoe sansevieria
trifasciata zamioculcas zamiifolia dracaena marginata schefflera anthurium spathiphyllum alocasia colocasia
caladium syngonium epipremnum aureum scindapsus pictus hoya carnosa kerrii peperomia
obtusifolia pilea peperomioides tradescantia zebrina fittonia maranta leuconeura stromanthe ctenanthe
aglaonema dieffenbachia aspidistra chlorophytum comosum nephrolepis exaltata adiantum asplenium platycerium
bifurcatum davallia polypodium blechnum tillandsia guzmania vriesea bromelia aechmea neoregelia
phalaenopsis dendrobium cattleya oncidium vanda paphiopedilum cymbidium masdevallia ludisia discolor
nepenthes sarracenia drosera dionaea muscipula pinguicula cephalotus euphorbia milii trigona
opuntia mammillaria echinocactus grusonii gymnocalycium cereus schlumbergera rhipsalis epiphyllum hylocereus
lithops senecio rowleyanus ceropegia woodii string pearls hearts dischidia rhaphidophora
tetrasperma adansonii obliqua borsigiana thai constellation albo variegated pink princess
red white black purple yellow orange blue silver gold bronze
copper velvet emerald ruby crimson scarlet ivory cream lime chartreuse
burgundy dwarf giant mini compacta nana major minor grandiflora parviflora
macrophylla microphylla latifolia angustifolia rotundifolia longifolia sylvestris vulgaris officinalis japonica
chinensis sinensis indica africana americana australis borealis montana alpina maritima
aquatica palustris elegans gracilis robusta pendula repens scandens erecta tomentosa
pubescens glabra hirsuta spinosa aurea alba rubra nigra lutea viridis
caerulea purpurea rosea argentea bird paradise nest staghorn maidenhair boston
kentia areca parlor ponytail sago fan majesty christmas easter money
tree chinese evergreen arrowhead prayer plant wandering dude inch polka
dot nerve hens chicks burro tail donkey panda bunny ears
zebra tiger leopard shark fin swiss cheese heartleaf satin cebu
marble queen neon jessenia manjula pearl joy snow moonlight birkin
congo rojo brasil micans melanochrysum gloriosum verrucosum spiritus sancti dragon
scale frydek polly amazonica stingray regal shield parsley cilantro coriander
dill chives oregano tarragon lemongrass fennel cherry jalapeño habanero cucumber
zucchini squash pumpkin lettuce spinach kale chard arugula radish carrot
beet onion garlic leek potato bean pea blueberry raspberry blackberry
grape mandarin kumquat avocado mango banana pineapple coffee tea cacao
vanilla tulip daffodil narcissus hyacinth crocus iris peony dahlia zinnia
marigold sunflower daisy aster chrysanthemum carnation geranium pelargonium petunia impatiens
fuchsia hibiscus jasmine gardenia camellia azalea rhododendron hydrangea lilac magnolia
wisteria clematis honeysuckle bougainvillea oleander poppy cosmos salvia verbena lobelia
alyssum snapdragon foxglove delphinium lupine hollyhock anemone ranunculus freesia gladiolus
amaryllis hippeastrum clivia cyclamen primula violet pansy viola saintpaulia gerbera
calendula nasturtium sweet morning glory passion flower bleeding heart café
au lait crème brûlée rosé señorita étoile fée müller blüte schöne
grüne façade élégance bébé piñata mimosa acacia eucalyptus olea citrus
`)

// rareWords are real plant words that take the last ranks of the
// vocabulary: the rarest, in this order ("welwitschia" is the last).
var rareWords = strings.Fields(`
wollemia nobilis rafflesia arnoldii amorphophallus titanum dracunculus
middlemist franklinia alatamaha encephalartos kokia cookei welwitschia
`)

// The benchmark's queries (bench/search.sh; `preload --words` prints them
// with how many of the plants from..to each matches).
const (
	queryCommon = "monstera"           // rank 1: in about a third of the names
	queryRare   = "welwitschia"        // the last rank: ~600 plants in 10M
	queryTwo    = "monstera deliciosa" // ranks 1 and 4: ~2% of the plants
	queryPrefix = "mon del"            // word prefixes, as a search box sends them while one types
	filterTag   = "tropical"           // the third tag: ~8% of the plants
)

// tags are the tags plants get (plants whose id is a multiple of 10 get
// none), drawn with a Zipf law of exponent 1: "indoor" is the most common.
var tags = strings.Fields(`
indoor outdoor tropical succulent herb balcony kitchen office bedroom shade
sunny flowering hanging seedling cutting gift pet-safe heirloom propagation terrarium
`)

// vocab is the vocabulary in rank order, and wordCDF and tagCDF the
// cumulative probabilities of the ranks.
var (
	vocab   = buildVocab()
	wordCDF = zipfCDF(len(vocab), zipfExponent)
	tagCDF  = zipfCDF(len(tags), 1)
)

// buildVocab returns commonWords, then synthetic words, then rareWords:
// vocabSize words whose folded forms (textsearch.Words) are distinct.
func buildVocab() []string {
	seen := make(map[string]bool, vocabSize)
	var head []string
	add := func(list *[]string, w string) bool {
		f := textsearch.Words(w)
		if len(f) != 1 || seen[f[0]] {
			return false
		}
		seen[f[0]] = true
		*list = append(*list, w)
		return true
	}
	var tail []string
	for _, w := range rareWords {
		add(&tail, w)
	}
	for _, w := range commonWords {
		add(&head, w)
	}
	r := rng(0x5eed30)
	for n := 0; len(head)+len(tail) < vocabSize; n++ {
		w := syntheticWord(&r)
		if n%10 == 0 {
			w = accent(w)
		}
		add(&head, w)
	}
	return append(head, tail...)
}

var (
	onsets  = strings.Fields("b br c ch d dr f g gl h k l m n p pl r s st t tr v z")
	vowels  = strings.Fields("a e i o u a e i o ia ou")
	joins   = strings.Fields("l r n s t v d m")
	codas   = strings.Fields("n r s l m")
	endings = strings.Fields("a us um is ia ella ina ensis oides")
)

// syntheticWord returns a pronounceable Latin-looking word: two or three
// syllables, then a consonant, or a consonant and a Latin ending:
// "baloria", "tristum".
func syntheticWord(r *rng) string {
	var b strings.Builder
	syllables := 2 + int(r.next()%2)
	for range syllables {
		b.WriteString(pick(r, onsets))
		b.WriteString(pick(r, vowels))
	}
	switch r.next() % 3 {
	case 0:
		b.WriteString(pick(r, codas))
	case 1:
		b.WriteString(pick(r, joins))
		b.WriteString(pick(r, endings))
	}
	return b.String()
}

// accent puts an accent on the first vowel of w that takes one: "velora"
// becomes "vélora".
func accent(w string) string {
	for i, c := range w {
		var a string
		switch c {
		case 'e':
			a = "é"
		case 'a':
			a = "à"
		case 'o':
			a = "ö"
		case 'u':
			a = "ü"
		}
		if a != "" {
			return w[:i] + a + w[i+1:]
		}
	}
	return w
}

func pick(r *rng, list []string) string { return list[r.next()%uint64(len(list))] }

// zipfCDF returns the cumulative probabilities of ranks 1..n when rank k has
// a weight of 1/k^s.
func zipfCDF(n int, s float64) []float64 {
	cdf := make([]float64, n)
	sum := 0.0
	for k := range n {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	return cdf
}

// draw returns a rank (0-based) from cdf.
func draw(r *rng, cdf []float64) int {
	u := r.float()
	return min(sort.SearchFloat64s(cdf, u), len(cdf)-1)
}

// rng is splitmix64: small, fast, and the same sequence everywhere.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float returns a number in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// plantName returns plant id's name: 2 or 3 distinct vocabulary words, the
// first capitalised ("Monstera deliciosa aurea").
func plantName(id int64) string {
	r := rng(uint64(id)*0x2545f4914f6cdd1d ^ 0x6e616d65)
	n := 2
	if r.float() < threeWords {
		n = 3
	}
	var ranks [3]int
	var b strings.Builder
	for i := range n {
		k := draw(&r, wordCDF)
		for try := 0; try < 8 && repeats(ranks[:i], k); try++ {
			k = draw(&r, wordCDF)
		}
		ranks[i] = k
		w := vocab[k]
		if i == 0 {
			w = capitalise(w)
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

func repeats(ranks []int, k int) bool {
	for _, r := range ranks {
		if r == k {
			return true
		}
	}
	return false
}

// capitalise upper-cases w's first letter (ASCII only: "étoile" stays).
func capitalise(w string) string {
	if w != "" && 'a' <= w[0] && w[0] <= 'z' {
		return string(w[0]-'a'+'A') + w[1:]
	}
	return w
}

// plantTag returns plant id's tag: none for every tenth plant, like real
// data with optional tags, else one of tags.
func plantTag(id int64) *string {
	if id%10 == 0 {
		return nil
	}
	r := rng(uint64(id)*0x9e3779b97f4a7c15 ^ 0x746167)
	t := tags[draw(&r, tagCDF)]
	return &t
}

// plantCreatedAt returns plant id's creation time: createdBase plus id
// milliseconds.
func plantCreatedAt(id int64) time.Time {
	return createdBase.Add(time.Duration(id) * time.Millisecond)
}
