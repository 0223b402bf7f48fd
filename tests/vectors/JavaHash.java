/*
 * Reference for reshard's `java` hash (DESIGN §2), run by gen_hash_vectors.py.
 *
 * Each argument is a key's bytes in hex.  The bytes are decoded as UTF-8 by
 * the JDK's own decoder set to REPORT malformed input (so that invalid UTF-8
 * is rejected rather than replaced by U+FFFD), and the point is
 * Math.abs((long) s.hashCode()): the widening before abs is what turns
 * Integer.MIN_VALUE into 2147483648.
 *
 * One line per argument: "HEX ok HASHCODE POINT" or "HEX invalid".
 *
 *   javac JavaHash.java && java JavaHash 68656c6c6f
 */
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

public class JavaHash {
	public static void main(String[] args) {
		for (String hex : args) {
			byte[] bytes = new byte[hex.length() / 2];
			for (int i = 0; i < bytes.length; i++)
				bytes[i] = (byte) Integer.parseInt(
					hex.substring(2 * i, 2 * i + 2), 16);

			CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT);
			String s;
			try {
				s = decoder.decode(ByteBuffer.wrap(bytes)).toString();
			} catch (CharacterCodingException e) {
				System.out.println(hex + " invalid");
				continue;
			}
			int h = s.hashCode();
			long point = Math.abs((long) h);
			System.out.println(hex + " ok " + h + " " + point);
		}
	}
}
