"""Tool families that take a measured number and work a result out from it: the cost of an electricity usage,
an irrigation plan for a field's soil moisture, where water boils at an altitude, and how long an activity
takes to burn some calories. Each takes a number another family reports (`meter_reading`'s kWh,
`soil_moisture`'s percentage, `elevation_at`'s metres, `nutrition_facts`' calories), so chains pass it on
(`agentkit.training.synthetic.chains`); their results are fixed formulas of the arguments
(`agentkit.training.synthetic.values.FORMULAS`)."""

from __future__ import annotations

from agentkit.training.synthetic.family import Family, fam

ESTIMATE_FAMILIES: tuple[Family, ...] = (
    fam("energy_cost electricity_cost usage_cost", "utilities",
         "The cost of an electricity usage in kWh on a tariff.",
         [("kwh", "int:20:2000", "electricity used, in kWh"),
          ("tariff", "enum:standard|economy|green", "electricity tariff")],
         "cost=fn:energy_cost", "{kwh} kWh on the {tariff} tariff costs {cost}.",
         ["What do {kwh} kWh cost on the {tariff} tariff?", "price {kwh} kwh at the {tariff} tariff",
          "How much is {kwh} kWh of electricity on {tariff}?"],
         ["{kwh} kWh on the {tariff} tariff costs {cost}.", "That usage comes to {cost} ({kwh} kWh, {tariff} tariff).",
          "On the {tariff} tariff, {kwh} kWh costs {cost}."],
         "price electricity usage"),
    fam("irrigation_plan plan_irrigation field_watering", "agriculture",
         "How much water to give a field to bring its soil moisture up to a target.",
         [("field_id", "code:FLD-###", "field ID"),
          ("moisture_percent", "int:5:60", "current soil moisture, in percent"),
          ("target_percent?", "int:25:45", "soil moisture to reach, in percent (default 35)")],
         "target_percent=fn:moisture_target; water_mm=fn:water_mm; run_minutes=fn:irrigation_minutes",
         "Field {field_id} at {moisture_percent}%: apply {water_mm} mm ({run_minutes} min of irrigation) "
         "to reach {target_percent}%.",
         ["How much should I water field {field_id}? It's at {moisture_percent}% moisture.",
          "irrigation plan for {field_id}, moisture {moisture_percent}%, target {target_percent}%",
          "Field {field_id} reads {moisture_percent}% soil moisture. Plan the irrigation."],
         ["Field {field_id} needs {water_mm} mm of water, about {run_minutes} minutes of irrigation, to reach "
          "{target_percent}%.",
          "To bring {field_id} from {moisture_percent}% to {target_percent}%, apply {water_mm} mm "
          "({run_minutes} minutes of irrigation).",
          "The plan for {field_id}: {water_mm} mm of water over {run_minutes} minutes."],
         "plan irrigation"),
    fam("boiling_point_at water_boiling_point altitude_boiling", "geo",
         "The boiling point of water and the air pressure at an altitude.",
         [("altitude_m", "int:0:4800", "altitude in metres above sea level")],
         "boiling_c=fn:boiling_c; pressure_kpa=fn:pressure_kpa",
         "At {altitude_m} m water boils at {boiling_c} C; air pressure {pressure_kpa} kPa.",
         ["At what point does water boil at {altitude_m} m?", "boiling point of water at {altitude_m} metres",
          "We're cooking at {altitude_m} m altitude. When does the water boil?"],
         ["At {altitude_m} m, water boils at {boiling_c} C (air pressure {pressure_kpa} kPa).",
          "Water boils at {boiling_c} C up there, where the pressure is {pressure_kpa} kPa.",
          "At that altitude water boils at {boiling_c} C."],
         "work out boiling points at altitude"),
    fam("calorie_burn burn_off_calories activity_burn", "fitness",
         "Minutes of an activity that burn a number of calories.",
         [("calories", "int:10:2000", "calories to burn, in kcal"),
          ("activity", "enum:walking|cycling|swimming|running", "the activity")],
         "minutes=fn:burn_minutes", "Burning {calories} kcal takes {minutes} min of {activity}.",
         ["How long do I need to spend {activity} to burn {calories} calories?",
          "minutes of {activity} for {calories} kcal",
          "I want to burn off {calories} kcal by {activity}. How long will that take?"],
         ["Burning {calories} kcal takes about {minutes} minutes of {activity}.",
          "That's {minutes} minutes of {activity}.", "{minutes} minutes of {activity} burns {calories} kcal."],
         "work out calorie burn"),
)
