package tokens

import (
	"encoding/base64"
	"math"
	"strings"

	"github.com/steadyllm/steady/providers"
)

// imageRule is how one model family bills an image. Tile models (patchBudget 0) shrink the
// image to fit 2048×2048, then until its shorter side is at most 768 px, and bill base plus
// tile per 512-px tile covering it at detail "high" or "auto", base alone at "low". Patch
// models bill the 32-px patches covering the image, shrunk to at most patchBudget patches,
// times multiplier (in hundredths, rounded), whatever the detail.
type imageRule struct {
	prefix      string
	base, tile  int
	patchBudget int
	multiplier  int // hundredths
}

// imageRules is OpenAI's table of image costs, most specific prefix first, from its guide
// "Images and vision", section "Calculating costs" (platform.openai.com/docs/guides/images-vision):
// 85 + 170 per tile for gpt-4o, gpt-4.1, gpt-4.5 (and gpt-4-turbo before them); 2833 + 5667
// for gpt-4o-mini; 75 + 150 for o1, o1-pro and o3; 70 + 140 for gpt-5 and gpt-5-chat-latest;
// 65 + 129 for computer-use-preview; 32-px patches capped at 1536 with multipliers 1.62
// (gpt-4.1-mini, gpt-5-mini), 2.46 (gpt-4.1-nano, gpt-5-nano) and 1.72 (o4-mini). The
// guide's text was read as quoted in openai/openai-python#2851 and xn1cklas/tokenlens#7;
// usage measured by a developer on the OpenAI forum ("Vision: more than one way to send a
// request", a 128×64 image) agrees with gpt-4o's, gpt-4o-mini's (2845 low = 2833 + 12 text,
// 8512 high = + 5667) and o3's (86, 236) rows. gpt-5.1 and later are billed as gpt-5 here;
// OpenAI's later models may use other rules.
var imageRules = []imageRule{
	{prefix: "gpt-4o-mini", base: 2833, tile: 5667},
	{prefix: "gpt-4.1-mini", patchBudget: 1536, multiplier: 162},
	{prefix: "gpt-4.1-nano", patchBudget: 1536, multiplier: 246},
	{prefix: "gpt-5-mini", patchBudget: 1536, multiplier: 162},
	{prefix: "gpt-5-nano", patchBudget: 1536, multiplier: 246},
	{prefix: "o4-mini", patchBudget: 1536, multiplier: 172},
	{prefix: "gpt-4o", base: 85, tile: 170},
	{prefix: "chatgpt-4o", base: 85, tile: 170},
	{prefix: "gpt-4.1", base: 85, tile: 170},
	{prefix: "gpt-4.5", base: 85, tile: 170},
	{prefix: "gpt-4", base: 85, tile: 170},
	{prefix: "o1", base: 75, tile: 150},
	{prefix: "o3", base: 75, tile: 150},
	{prefix: "gpt-5", base: 70, tile: 140},
	{prefix: "computer-use-preview", base: 65, tile: 129},
}

// defaultImageRule is gpt-4o's, for a model the table does not know.
var defaultImageRule = imageRule{prefix: "gpt-4o", base: 85, tile: 170}

// imageRuleFor returns the rule of model's family.
func imageRuleFor(model string) imageRule {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	if len(model) >= 3 && strings.EqualFold(model[:3], "ft:") {
		model = model[3:]
	}
	for _, r := range imageRules {
		if matchFamily(model, family{prefix: r.prefix, versions: true}) {
			return r
		}
	}
	return defaultImageRule
}

// ImageTokens returns what img costs in a prompt to model, by OpenAI's documented rules (see
// imageRules): detail "low" costs a tile model its base, "high", "auto" and "" (which the API
// treats as auto) its base plus its tiles; a patch model bills patches at any detail. The size
// is read from the header of img.Data, or of a base64 data: URL (PNG, JPEG, GIF and WebP).
// An image whose size cannot be read — a remote URL, a format not recognised — is counted as
// the most an image can cost the model (8 tiles, or the whole patch budget): an estimate that
// a budget must not be overrun by, since OpenAI bills what it downloads. A model the table
// does not know is billed as gpt-4o. A nil img counts 0.
func ImageTokens(model string, img *providers.Image) int {
	if img == nil {
		return 0
	}
	r := imageRuleFor(model)
	w, h, ok := imageSize(img)
	if r.patchBudget > 0 {
		patches := r.patchBudget
		if ok {
			patches = patchCount(w, h, r.patchBudget)
		}
		return (patches*r.multiplier + 50) / 100
	}
	if strings.EqualFold(img.Detail, "low") {
		return r.base
	}
	tiles := 8 // 2048×768 after shrinking: 4 × 2
	if ok {
		tiles = tileCount(w, h)
	}
	return r.base + tiles*r.tile
}

// tileCount is the number of 512-px tiles covering a w×h image once shrunk (never enlarged)
// to fit 2048×2048 and then to a shorter side of at most 768 px.
func tileCount(w, h int) int {
	fw, fh := float64(w), float64(h)
	if m := math.Max(fw, fh); m > 2048 {
		fw, fh = fw*2048/m, fh*2048/m
	}
	if m := math.Min(fw, fh); m > 768 {
		fw, fh = fw*768/m, fh*768/m
	}
	return int(math.Ceil(fw/512)) * int(math.Ceil(fh/512))
}

// patchCount is the number of 32-px patches covering a w×h image, shrunk when they exceed
// budget by the guide's factor: the square root of the budget's area over the image's, then
// reduced so that a whole number of patches fits the side that fills up first.
func patchCount(w, h, budget int) int {
	n := ceilDiv(w, 32) * ceilDiv(h, 32)
	if n <= budget {
		return n
	}
	fw, fh := float64(w), float64(h)
	shrink := math.Sqrt(32 * 32 * float64(budget) / (fw * fh))
	sw, sh := fw*shrink/32, fh*shrink/32
	adj := shrink * math.Min(math.Max(math.Floor(sw), 1)/sw, math.Max(math.Floor(sh), 1)/sh)
	rw, rh := int(fw*adj), int(fh*adj)
	n = max(ceilDiv(rw, 32), 1) * max(ceilDiv(rh, 32), 1)
	return min(n, budget)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// maxSniff bounds how much of a data: URL is decoded to find the image's size: a JPEG's
// frame header follows its metadata, which is rarely longer.
const maxSniff = 64 << 10

// imageSize reads an image's size from its header, without decoding the image.
func imageSize(img *providers.Image) (w, h int, ok bool) {
	if len(img.Data) > 0 {
		return sniffSize(img.Data)
	}
	const prefix = "data:"
	u := img.URL
	if len(u) < len(prefix) || !strings.EqualFold(u[:len(prefix)], prefix) {
		return 0, 0, false
	}
	comma := strings.IndexByte(u, ',')
	if comma < 0 || !strings.HasSuffix(strings.ToLower(u[:comma]), ";base64") {
		return 0, 0, false
	}
	enc := u[comma+1:]
	if len(enc) > maxSniff/3*4 {
		enc = enc[:maxSniff/3*4]
	}
	head := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Decode(head, []byte(enc))
	if err != nil && n == 0 {
		return 0, 0, false
	}
	return sniffSize(head[:n])
}
