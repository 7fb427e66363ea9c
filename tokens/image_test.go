package tokens

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// sized returns a PNG of w×h pixels.
func sized(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImageTokens_GuideExamples are the worked examples of OpenAI's "Images and vision"
// guide (Calculating costs), and the 128×64 image a forum post measured per model.
func TestImageTokens_GuideExamples(t *testing.T) {
	for _, tc := range []struct {
		model  string
		w, h   int
		detail string
		want   int
	}{
		{"gpt-4o", 1024, 1024, "high", 765},   // shrunk to 768×768: 4 tiles
		{"gpt-4o", 2048, 4096, "high", 1105},  // 1024×2048, then 768×1536: 6 tiles
		{"gpt-4o", 4096, 8192, "low", 85},     // low is the base alone
		{"gpt-4o", 512, 512, "auto", 255},     // never enlarged: 1 tile
		{"gpt-4o", 513, 500, "", 425},         // 2 tiles
		{"gpt-4.1", 1024, 1024, "high", 765},  // gpt-4.1 is a tile model
		{"gpt-4o-mini", 128, 64, "low", 2833}, // forum: 2845 with 12 tokens of text
		{"gpt-4o-mini", 128, 64, "high", 8500},
		{"o3", 128, 64, "high", 225},               // forum: 236 with 11 of text
		{"gpt-5", 1024, 1024, "high", 70 + 4*140},  // the guide's gpt-5 row
		{"gpt-4.1-mini", 1024, 1024, "high", 1659}, // 1024 patches × 1.62
		{"gpt-4.1-mini", 1800, 2400, "low", 2352},  // 1452 patches (the guide's example) × 1.62
		{"gpt-4.1-mini", 128, 64, "high", 13},      // forum: 26 with 13 of text
		{"gpt-4.1-nano", 128, 64, "high", 20},      // forum: 33 with 13 of text
		{"o4-mini", 128, 64, "low", 14},            // forum: 26 with 12 of text
		{"some-unknown-model", 1024, 1024, "high", 765},
	} {
		img := &providers.Image{Data: sized(t, tc.w, tc.h), MediaType: "image/png", Detail: tc.detail}
		if got := ImageTokens(tc.model, img); got != tc.want {
			t.Errorf("%s %dx%d %s: %d tokens, want %d", tc.model, tc.w, tc.h, tc.detail, got, tc.want)
		}
	}
}

func TestPatchCount_GuideExample(t *testing.T) {
	if got := patchCount(1800, 2400, 1536); got != 1452 {
		t.Errorf("1800×2400: %d patches, the guide says 1452", got)
	}
	if got := patchCount(1, 100000, 1536); got < 1 || got > 1536 {
		t.Errorf("1×100000: %d patches, want 1..1536", got)
	}
}

// TestImageTokens_UnknownSizeIsTheMost: an image whose size cannot be read costs the most the
// model bills for one, never less.
func TestImageTokens_UnknownSizeIsTheMost(t *testing.T) {
	for _, tc := range []struct {
		model string
		img   providers.Image
		want  int
	}{
		{"gpt-4o", providers.Image{URL: "https://example.com/cat.jpg"}, 85 + 8*170},
		{"gpt-4o", providers.Image{URL: "https://example.com/cat.jpg", Detail: "low"}, 85},
		{"gpt-4.1-mini", providers.Image{URL: "https://example.com/cat.jpg"}, 2488}, // 1536 × 1.62
		{"gpt-4o", providers.Image{Data: []byte("not an image"), MediaType: "image/png"}, 85 + 8*170},
		{"gpt-4o", providers.Image{Data: sized(t, 600, 600)[:20]}, 85 + 8*170}, // cut short
		{"gpt-4o", providers.Image{URL: "data:image/png;base64,@@@@"}, 85 + 8*170},
	} {
		if got := ImageTokens(tc.model, &tc.img); got != tc.want {
			t.Errorf("%s %+v: %d, want %d", tc.model, tc.img.URL, got, tc.want)
		}
	}
	for _, w := range []int{1, 100, 800, 2048, 5000, 20000} {
		for _, h := range []int{1, 300, 768, 4000} {
			if n := tileCount(w, h); n > 8 {
				t.Errorf("%dx%d: %d tiles, more than the 8 assumed for an unknown size", w, h, n)
			}
			if n := patchCount(w, h, 1536); n > 1536 {
				t.Errorf("%dx%d: %d patches, over the budget", w, h, n)
			}
		}
	}
	if ImageTokens("gpt-4o", nil) != 0 {
		t.Error("a nil image counts")
	}
}

func TestImageSize_Formats(t *testing.T) {
	var jpg, gf bytes.Buffer
	if err := jpeg.Encode(&jpg, image.NewRGBA(image.Rect(0, 0, 640, 480)), nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gf, image.NewPaletted(image.Rect(0, 0, 33, 17), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	pngData := sized(t, 1000, 250)
	// WebP headers as the container spec lays them out: RIFF, size, WEBP, then the first chunk.
	webp := func(chunk string, payload ...byte) []byte {
		b := append([]byte("RIFF\x00\x00\x00\x00WEBP"+chunk+"\x00\x00\x00\x00"), payload...)
		for len(b) < 30 {
			b = append(b, 0)
		}
		return b
	}
	vp8 := webp("VP8 ", 0, 0, 0, 0x9D, 0x01, 0x2A, 0x20, 0x03, 0x58, 0x02) // 800×600
	var bits [4]byte
	binary.LittleEndian.PutUint32(bits[:], 99|49<<14) // 100×50, each side less one
	vp8l := webp("VP8L", 0x2F, bits[0], bits[1], bits[2], bits[3])
	vp8x := webp("VP8X", 0, 0, 0, 0, 0xFF, 0x0F, 0, 0x37, 0x04, 0) // 4096×1080
	for name, tc := range map[string]struct {
		img  providers.Image
		w, h int
	}{
		"png":                  {providers.Image{Data: pngData}, 1000, 250},
		"jpeg":                 {providers.Image{Data: jpg.Bytes()}, 640, 480},
		"gif":                  {providers.Image{Data: gf.Bytes()}, 33, 17},
		"webp vp8":             {providers.Image{Data: vp8}, 800, 600},
		"webp vp8l":            {providers.Image{Data: vp8l}, 100, 50},
		"webp vp8x":            {providers.Image{Data: vp8x}, 4096, 1080},
		"data url":             {providers.Image{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData)}, 1000, 250},
		"data url, upper case": {providers.Image{URL: "DATA:image/png;BASE64," + base64.StdEncoding.EncodeToString(pngData)}, 1000, 250},
	} {
		w, h, ok := imageSize(&tc.img)
		if !ok || w != tc.w || h != tc.h {
			t.Errorf("%s: %d×%d %v, want %d×%d", name, w, h, ok, tc.w, tc.h)
		}
	}
	if n := testing.AllocsPerRun(100, func() { sniffSize(jpg.Bytes()) }); n != 0 {
		t.Errorf("sniffing a JPEG: %v allocations, want 0", n)
	}
}

// FuzzSniffSize: no header, however broken, panics or reads out of bounds.
func FuzzSniffSize(f *testing.F) {
	f.Add([]byte("\xff\xd8\xff\xc0\x00\x11\x08\x00\x10\x00\x10"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8X\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if w, h, ok := sniffSize(b); ok && (w <= 0 || h <= 0) {
			t.Errorf("ok with %d×%d", w, h)
		}
	})
}
