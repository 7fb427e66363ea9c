package tokens

import "encoding/binary"

// sniffSize reads the pixel size of a PNG, GIF, JPEG or WebP image from its first bytes;
// ok is false for anything else, or a header cut short. It allocates nothing.
func sniffSize(b []byte) (w, h int, ok bool) {
	switch {
	case len(b) >= 24 && string(b[:8]) == "\x89PNG\r\n\x1a\n" && string(b[12:16]) == "IHDR":
		w, h = int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24]))
	case len(b) >= 10 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		w, h = int(binary.LittleEndian.Uint16(b[6:8])), int(binary.LittleEndian.Uint16(b[8:10]))
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8:
		return jpegSize(b)
	case len(b) >= 30 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return webpSize(b)
	default:
		return 0, 0, false
	}
	return w, h, w > 0 && h > 0
}

// jpegSize walks a JPEG's marker segments to its frame header (SOF0–SOF15, less DHT, JPG and
// DAC, which share the range), which holds height then width.
func jpegSize(b []byte) (w, h int, ok bool) {
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xFF {
			return 0, 0, false
		}
		marker := b[i+1]
		switch {
		case marker == 0xFF: // fill byte
			i++
			continue
		case marker == 0x01 || (marker >= 0xD0 && marker <= 0xD9): // no length
			i += 2
			continue
		}
		length := int(binary.BigEndian.Uint16(b[i+2 : i+4]))
		if length < 2 {
			return 0, 0, false
		}
		if marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
			if i+9 > len(b) {
				return 0, 0, false
			}
			h = int(binary.BigEndian.Uint16(b[i+5 : i+7]))
			w = int(binary.BigEndian.Uint16(b[i+7 : i+9]))
			return w, h, w > 0 && h > 0
		}
		i += 2 + length
	}
	return 0, 0, false
}

// webpSize reads the size from a WebP's first chunk: VP8 (lossy), VP8L (lossless) or VP8X
// (extended, which gives the canvas).
func webpSize(b []byte) (w, h int, ok bool) {
	switch string(b[12:16]) {
	case "VP8 ":
		if b[23] != 0x9D || b[24] != 0x01 || b[25] != 0x2A {
			return 0, 0, false
		}
		w = int(binary.LittleEndian.Uint16(b[26:28]) & 0x3FFF)
		h = int(binary.LittleEndian.Uint16(b[28:30]) & 0x3FFF)
	case "VP8L":
		if b[20] != 0x2F {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		w = int(bits&0x3FFF) + 1
		h = int(bits>>14&0x3FFF) + 1
	case "VP8X":
		w = int(uint32(b[24])|uint32(b[25])<<8|uint32(b[26])<<16) + 1
		h = int(uint32(b[27])|uint32(b[28])<<8|uint32(b[29])<<16) + 1
	default:
		return 0, 0, false
	}
	return w, h, w > 0 && h > 0
}
